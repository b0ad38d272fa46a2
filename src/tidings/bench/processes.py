"""``tidings worker`` processes for benchmarks: start several, wait until each polls, stop them.

The bench times from the moment an event is published, so the workers are started (Python
start-up, imports, schema check, types loaded) and known to be polling before the clock starts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tidings
from tidings.bench import BenchFailure

READY = "worker started"
SRC = str(Path(tidings.__file__).resolve().parents[1])


def child_env(url: str, **settings: str) -> dict[str, str]:
    """The environment of a `tidings` child process on ``url``: the same tidings as this
    process (installed or not), plus ``settings``."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": SRC + (os.pathsep + path if path else ""),
            "TIDINGS_DATABASE_URL": url, **settings}


class WorkerProcesses:
    """``count`` worker processes on ``url``; a context manager that stops them on exit."""

    def __init__(self, url: str, count: int, *, chunk_size: int, poll: float,
                 ready_timeout: float = 60.0) -> None:
        self.url = url
        self.count = count
        self.chunk_size = chunk_size
        self.poll = poll
        self.ready_timeout = ready_timeout
        self._logs = Path(tempfile.mkdtemp(prefix="tidings-bench-workers-"))
        self._procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> WorkerProcesses:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        env = child_env(self.url, TIDINGS_CHUNK_SIZE=str(self.chunk_size))
        for i in range(self.count):
            with (self._logs / f"worker-{i}.log").open("wb") as log:
                self._procs.append(subprocess.Popen(
                    [sys.executable, "-m", "tidings.cli", "worker", "--poll", str(self.poll)],
                    env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + self.ready_timeout
        waiting = set(range(self.count))
        while waiting:
            for i in sorted(waiting):
                if self._procs[i].poll() is not None:
                    raise BenchFailure(f"worker {i} exited with {self._procs[i].returncode}:\n"
                                       + self.log_tail(i))
                if READY in (self._logs / f"worker-{i}.log").read_text(errors="replace"):
                    waiting.discard(i)
            if time.monotonic() > deadline:
                raise BenchFailure(f"workers {sorted(waiting)} not ready after "
                                   f"{self.ready_timeout:.0f} s")
            time.sleep(0.02)

    def check_alive(self) -> None:
        for i, proc in enumerate(self._procs):
            if proc.poll() is not None:
                raise BenchFailure(f"worker {i} exited with {proc.returncode}:\n"
                                   + self.log_tail(i))

    def stop(self) -> None:
        """SIGTERM (finish the running job, take no more), then SIGKILL if one hangs."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self._procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        for log in self._logs.glob("*.log"):
            log.unlink()
        self._logs.rmdir()

    def log_tail(self, i: int, lines: int = 20) -> str:
        text = (self._logs / f"worker-{i}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])
