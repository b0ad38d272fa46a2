"""A ``tidings worker`` in a process of its own, beside a test's API server (``servers.start``
with ``run_worker=False``): the deployment where the API and the worker share only the store.

    with WorkerProcess(store_url, tmp_path, {"TIDINGS_WEBHOOK_SECRET": ...}) as worker:
        ... publish through the API; the worker process delivers ...

The worker reads its settings from ``TIDINGS_*`` variables (``env``) and its types from the store.
Test modules import it before pytest could rewrite it (it asserts nothing): PYTEST_DONT_REWRITE.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import tidings

SRC = str(Path(tidings.__file__).resolve().parents[1])


class WorkerProcess:
    def __init__(self, url: str, logs: Path, env: dict[str, str] | None = None) -> None:
        path = os.environ.get("PYTHONPATH")
        self.env = {**os.environ, "PYTHONPATH": SRC + (os.pathsep + path if path else ""),
                    "TIDINGS_DATABASE_URL": url, "TIDINGS_JOB_BACKOFF_SECONDS": "0.2",
                    **(env or {})}
        self.log = logs / "worker.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> WorkerProcess:
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tidings.cli", "worker", "--poll", "0.05"],
                env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while b"worker started" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{self.output()}")
            time.sleep(0.05)
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
