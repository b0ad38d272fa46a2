"""Resident memory (RSS) of the bench's child processes, sampled from a background thread.

Read from ``/proc/PID/status`` (``VmRSS``), so on Linux only: psutil is not a dependency of
tidings, and elsewhere every figure is ``None`` (printed "n/a"). A sampler asks, at each tick,
which processes to look at (a server's processes can only be named once it has started them)
and keeps every reading, so a figure can be the start, the peak or the end of a phase.

The RSS of a Python process counts the pages it touched and still holds: a leak shows as a
rising floor, a large transient allocation as a peak that may or may not come back down
(CPython's allocator returns arenas only when they are wholly free).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

PROC = Path("/proc")
MB = 1024 * 1024


def supported() -> bool:
    """Whether RSS can be read on this machine (Linux's /proc)."""
    return (PROC / "self" / "status").is_file()


def rss_bytes(pid: int) -> int | None:
    """The resident set size of ``pid`` in bytes, or None (no /proc, or the process is gone)."""
    try:
        text = (PROC / str(pid) / "status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) >= 2 and parts[1].isdigit() else None
    return None


def _cmdline(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (its threads' ``children`` files; a scan of
    ``/proc/*/stat`` where the kernel has no such file)."""
    found: set[int] = set()
    tasks = PROC / str(pid) / "task"
    try:
        listed = [task / "children" for task in tasks.iterdir()]
    except OSError:
        return []
    if listed and all(path.exists() for path in listed):
        for path in listed:
            try:
                found.update(int(x) for x in path.read_text().split())
            except (OSError, ValueError):
                continue
        return sorted(found)
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid …": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(pid):
            found.add(int(entry.name))
    return sorted(found)


def serving_processes(pid: int) -> list[int]:
    """The processes that answer requests for a server started as ``pid``: with several
    processes (``uvicorn --workers N``) ``pid`` supervises and its children serve (the
    ``multiprocessing`` resource tracker is left out); with one, ``pid`` serves itself. A
    child the supervisor restarts (uvicorn does when one misses its health check) is a new
    process with a new id."""
    workers = [child for child in children(pid) if "resource_tracker" not in _cmdline(child)]
    return workers or [pid]


def mb(value: int | None) -> float | None:
    return None if value is None else round(value / MB, 1)


def fmt_mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def fmt_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f} %"


@dataclass
class Series:
    """One process's readings: (seconds since the sampler started, bytes). ``first_s`` and
    ``last_s`` of its summary show a process that came or went during the phase."""

    pid: int | None
    readings: list[tuple[float, int]] = field(default_factory=list)

    def summary(self, warm: float = 0.1) -> dict[str, Any]:
        """Start, peak and end in MB, and how far the end and the peak are from the start;
        ``warm_mb`` is the reading at ``warm`` of the way through (after the first jobs have
        loaded what a process loads once) and ``flat_pct`` the largest distance of a later
        reading from it, signed: how flat the process stayed once warm. ``tenths_mb``: the
        readings at 0, 10, … 100 % of the way, the curve in eleven points."""
        if not self.readings:
            return {"pid": self.pid, "samples": 0, "first_s": None, "last_s": None,
                    "start_mb": None, "warm_mb": None, "peak_mb": None, "end_mb": None,
                    "drift_pct": None, "peak_growth_pct": None, "flat_pct": None,
                    "tenths_mb": []}
        start, end = self.readings[0][1], self.readings[-1][1]
        peak = max(value for _, value in self.readings)
        first, last = self.readings[0][0], self.readings[-1][0]
        later = [value for at, value in self.readings if at >= first + warm * (last - first)]
        settled = later[0]
        farthest = max(later, key=lambda value: abs(value - settled))
        return {"pid": self.pid, "samples": len(self.readings),
                "first_s": round(first, 2), "last_s": round(last, 2),
                "start_mb": mb(start), "warm_mb": mb(settled), "peak_mb": mb(peak),
                "end_mb": mb(end), "drift_pct": _pct(end, start),
                "peak_growth_pct": _pct(peak, start), "flat_pct": _pct(farthest, settled),
                "tenths_mb": [mb(self.at(first + k / 10 * (last - first))) for k in range(11)]}

    def at(self, moment: float) -> int:
        """The first reading at or after ``moment`` (the last one if none is)."""
        return next((value for at, value in self.readings if at >= moment),
                    self.readings[-1][1])


def _pct(value: int, base: int) -> float | None:
    return round((value - base) / base * 100, 1) if base else None


class RssSampler:
    """Every ``interval`` seconds, the RSS of each process ``targets()`` names (label -> pid);
    a context manager that takes one reading on entry and one on exit, so a phase shorter than
    the interval still has a start and an end."""

    def __init__(self, targets: Callable[[], Mapping[str, int]], interval: float = 0.1) -> None:
        self.targets = targets
        self.interval = interval
        self.series: dict[str, Series] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._t0 = time.perf_counter()

    def __enter__(self) -> RssSampler:
        self._t0 = time.perf_counter()
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        """One reading of every target process now (a gone process is skipped)."""
        if not supported():
            return
        try:
            targets = dict(self.targets())
        except OSError:
            return
        at = time.perf_counter() - self._t0
        with self._lock:
            for label, pid in targets.items():
                value = rss_bytes(pid)
                if value is None:
                    continue
                series = self.series.get(label)
                if series is None or series.pid != pid:  # a restarted process: a new series
                    series = self.series[label] = Series(pid)
                series.readings.append((at, value))

    def summaries(self, labels: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """Each process's :meth:`Series.summary`, by label (those of ``labels`` if given,
        with empty summaries for labels never read)."""
        with self._lock:
            names = labels if labels is not None else list(self.series)
            return {name: (self.series[name].summary() if name in self.series
                           else Series(None).summary()) for name in names}


def server_targets(name: str, pid: int | None) -> dict[str, int]:
    """``name``'s serving processes, labelled ``name [pid]`` (none before it starts)."""
    if pid is None:
        return {}
    return {f"{name} [{child}]": child for child in serving_processes(pid)}


def memory_table(title: str, processes: Mapping[str, dict[str, Any]],
                 goal: Callable[[str], str]) -> Table:
    """One row per process: when it was seen, its RSS at the start, peak and end of the phase,
    the drift (end against start), the peak against the start, how flat it stayed after the
    first 10 % of the phase, and the goal."""
    out = Table(title=title, title_justify="left")
    out.add_column("process")
    for column in ("seen (s)", "start MB", "peak MB", "end MB", "drift (end)",
                   "peak vs start", "flat after 10 %", "goal"):
        out.add_column(column, justify="right")
    for label, row in processes.items():
        seen = "n/a" if row["first_s"] is None else f"{row['first_s']:g} to {row['last_s']:g}"
        out.add_row(label, seen, fmt_mb(row["start_mb"]), fmt_mb(row["peak_mb"]),
                    fmt_mb(row["end_mb"]), fmt_pct(row["drift_pct"]),
                    fmt_pct(row["peak_growth_pct"]), fmt_pct(row["flat_pct"]), goal(label))
    return out
