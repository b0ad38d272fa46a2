"""Processes for benchmarks: ``tidings worker`` processes (start several, wait until each polls,
stop them) and HTTP servers on loopback (start, wait until ready, stop).

The bench times from the moment an event is published, so the workers are started (Python
start-up, imports, schema check, types loaded) and known to be polling before the clock starts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, Self

import httpx
from sqlalchemy.engine import make_url

import tidings
import tidings_benchmarks as benchmarks
from tidings_benchmarks import BenchFailure

READY = "worker started"
# where this process found tidings and the benchmarks, installed or not
SRC = os.pathsep.join(dict.fromkeys(
    str(Path(module.__file__ or "").resolve().parents[1]) for module in (tidings, benchmarks)))


def child_env(url: str, **settings: str) -> dict[str, str]:
    """The environment of a `tidings` child process on ``url``: the same tidings and benchmarks
    as this process (installed or not), plus ``settings``."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": SRC + (os.pathsep + path if path else ""),
            "TIDINGS_DATABASE_URL": url, **settings}


class Launched:
    """Processes started as a context: launched and waited for on entry (stopped again if
    that fails), stopped on exit."""

    def launch(self) -> None:
        raise NotImplementedError

    def wait_ready(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.launch()
        self.wait_ready()


def _sqlite_writable(url: str) -> bool:
    """Whether a write transaction could start on ``url`` now (always true off SQLite)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return True
    connection = sqlite3.connect(parsed.database, timeout=0, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        connection.close()


class WorkerProcesses(Launched):
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

    def launch(self) -> None:
        """Start the processes without waiting for them."""
        env = child_env(self.url, TIDINGS_CHUNK_SIZE=str(self.chunk_size))
        for i in range(self.count):
            with (self._logs / f"worker-{i}.log").open("wb") as log:
                self._procs.append(subprocess.Popen(
                    [sys.executable, "-m", "tidings.cli", "worker", "--poll", str(self.poll)],
                    env=env, stdout=log, stderr=subprocess.STDOUT))

    def wait_ready(self) -> None:
        """Wait until every process polls the queue."""
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

    def pids(self) -> dict[str, int]:
        """The running processes' ids, by label (``worker 1`` …)."""
        return {f"worker {i}": proc.pid for i, proc in enumerate(list(self._procs), 1)}

    def pause(self, *, timeout: float = 30.0) -> None:
        """Stop the processes (SIGSTOP): nothing is fanned out until :meth:`resume`, and the
        box's cores go to what is timed meanwhile.

        SQLite has one writer: a worker stopped inside a write transaction (a poll of the
        queue takes the write lock) would hold every publish in ``busy_timeout`` for as long
        as it stays stopped. So on SQLite the processes are stopped again until the write lock
        is free while they are stopped. The server databases lock rows, none a publish needs."""
        deadline = time.monotonic() + timeout
        while True:
            for proc in self._procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGSTOP)
            if _sqlite_writable(self.url):
                return
            self.resume()
            if time.monotonic() > deadline:
                raise BenchFailure(f"the workers held SQLite's write lock for {timeout:.0f} s")
            time.sleep(0.005)

    def resume(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)

    def check_alive(self) -> None:
        for i, proc in enumerate(self._procs):
            if proc.poll() is not None:
                raise BenchFailure(f"worker {i} exited with {proc.returncode}:\n"
                                   + self.log_tail(i))

    def stop(self) -> None:
        """SIGTERM (finish the running job, take no more), then SIGKILL if one hangs."""
        self.resume()  # a paused process hears SIGTERM only once it runs again
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


class Server(Launched):
    """An HTTP server on a free loopback port, as a context manager; ``port`` once started.

    :meth:`tidings_serve` makes one for ``tidings serve``; the HTTP baseline
    (:mod:`tidings_benchmarks.baseline_app`) runs under uvicorn the same way.
    """

    def __init__(self, name: str, argv: Callable[[int], list[str]], env: dict[str, str], *,
                 ready_timeout: float = 60.0) -> None:
        self.name = name
        self.ready_timeout = ready_timeout
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port: int = probe.getsockname()[1]
        self._argv = argv(self.port)
        self._env = env
        self._log = Path(tempfile.mkdtemp(prefix="tidings-bench-serve-")) / "serve.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def tidings_serve(cls, url: str, processes: int, api_key: str) -> Server:
        """``tidings serve --workers P --no-worker`` (its rate limit out of the way)."""
        env = child_env(url, TIDINGS_API_KEY=api_key, TIDINGS_RATE_LIMIT="1000000000")
        return cls("tidings serve", lambda port: [
            sys.executable, "-m", "tidings.cli", "serve", "--host", "127.0.0.1",
            "--port", str(port), "--workers", str(processes), "--no-worker"], env)

    def launch(self) -> None:
        """Start the process without waiting for it."""
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(self._argv, env=self._env, stdout=log,
                                          stderr=subprocess.STDOUT)

    def wait_ready(self) -> None:
        """Wait until the server answers ``GET /readyz`` with 200."""
        assert self._proc is not None
        deadline = time.monotonic() + self.ready_timeout
        with httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=5) as client:
            while True:
                if self._proc.poll() is not None:
                    raise BenchFailure(f"{self.name} exited with {self._proc.returncode}:\n"
                                       + self.log_tail())
                try:
                    if client.get("/readyz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise BenchFailure(f"{self.name} not ready after {self.ready_timeout:.0f}"
                                       " s:\n" + self.log_tail())
                time.sleep(0.05)

    @property
    def pid(self) -> int | None:
        """The id of the process started (None before :meth:`launch` and after :meth:`stop`)."""
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        self._log.unlink(missing_ok=True)
        if self._log.parent.exists():
            self._log.parent.rmdir()

    def log_tail(self, lines: int = 20) -> str:
        text = self._log.read_text(errors="replace") if self._log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


class Service(Protocol):
    """A set of processes that :func:`started` can launch, wait for and stop."""

    def launch(self) -> None: ...

    def wait_ready(self) -> None: ...

    def stop(self) -> None: ...


@contextlib.contextmanager
def started(*services: Service) -> Iterator[None]:
    """Launch every service at once, then wait for each (their start-ups overlap); stop them
    all, last first, on the way out."""
    try:
        for service in services:
            service.launch()
        for service in services:
            service.wait_ready()
        yield
    finally:
        for service in reversed(services):
            service.stop()
