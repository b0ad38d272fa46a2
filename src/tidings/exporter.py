"""How the command line's processes expose their metrics (:mod:`tidings.metrics`).

prometheus-client decides as it is imported whether values live in this process's memory or
in files of ``PROMETHEUS_MULTIPROC_DIR`` that several processes share, so this module imports
it only inside its functions, after the environment is settled:

- ``tidings serve --workers N`` (N > 1): :func:`shared_metrics_dir` before uvicorn starts the
  processes, so a scrape of any of them sums all;
- ``tidings worker``: :func:`single_process` (its figures are its own, never summed into an
  API server's directory), then :func:`tidings.metrics.serve_metrics` on ``--metrics-port``.
"""

from __future__ import annotations

import os
from pathlib import Path

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"


def shared_metrics_dir(workers: int) -> str | None:
    """The directory the server's processes share their metrics in: the one
    ``PROMETHEUS_MULTIPROC_DIR`` names, emptied of an earlier run's files, or, for more than
    one process, a new temporary one, returned so that the caller removes it at the end. One
    process with no directory given keeps its metrics in memory."""
    given = os.environ.get(MULTIPROC_DIR)
    if given:
        directory = Path(given)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):  # values of the processes of an earlier run
            stale.unlink()
        return None
    if workers == 1:
        return None
    import tempfile

    made = tempfile.mkdtemp(prefix="tidings-metrics-")
    os.environ[MULTIPROC_DIR] = made  # inherited by the processes uvicorn starts
    return made


def single_process() -> None:
    """This process's metrics are its own: drop an inherited ``PROMETHEUS_MULTIPROC_DIR``."""
    os.environ.pop(MULTIPROC_DIR, None)
