"""tidings against its baseline: one entry per figure, with both sides and their ratio.

The ratio is always tidings' rate over the baseline's (requests, rows or events per second)
measured in the same run on the same data, so 1.0 is parity and more is better; a goal is met
when its ratio is, whatever the machine's mood that minute. An entry is plain JSON::

    {"figure": "unread count", "unit": "requests/s",
     "tidings": {"per_second": 812.0, "per_second_rounds": [...], "latency": {...} | null},
     "baseline": {... the same ..., "statement": "SELECT …", "anchor": "raw_postgresql.py: …"},
     "ratio": 0.069, "goal_ratio": 0.85,
     "lean": {... the same, of the lean layout's raw statements ...}, "ratio_to_lean": 0.21}

``lean`` and ``ratio_to_lean`` (tidings over the lean raw side) are there when the bench ran
that side (:mod:`tidings_benchmarks.lean_raw`).

A sweep (``--sweep``) is a set of series, each a list of points ``{"x", "tidings",
"baseline", "ratio"}`` (per-second figures), with the x axis named once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rich.table import Table

from tidings_benchmarks.measure import Latencies, median
from tidings_benchmarks.report import fmt_ms, fmt_rate


class Phase(Protocol):
    """One timed phase: a rate and, for per-request figures, each request's latency."""

    @property
    def per_second(self) -> float: ...

    @property
    def latencies(self) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class Side:
    """One side of a figure: its median rate over rounds, and latencies if per request."""

    per_second: float
    rounds: tuple[float, ...]
    latencies: tuple[float, ...] | None = None

    @classmethod
    def of(cls, phases: Sequence[Phase], *, per_request: bool = True) -> Side:
        return cls(median([p.per_second for p in phases]),
                   tuple(p.per_second for p in phases),
                   tuple(x for p in phases for x in p.latencies) if per_request else None)

    @classmethod
    def of_rates(cls, rates: Sequence[float]) -> Side:
        return cls(median(rates), tuple(rates))

    def to_dict(self) -> dict[str, Any]:
        return {"per_second": round(self.per_second, 1),
                "per_second_rounds": [round(r, 1) for r in self.rounds],
                "latency": (Latencies(self.latencies).to_dict()
                            if self.latencies is not None else None)}


def ratio(tidings: float, baseline: float) -> float | None:
    """tidings over baseline, to 4 significant digits (None without a baseline rate)."""
    return float(f"{tidings / baseline:.4g}") if baseline > 0 else None


def comparison(figure: str, unit: str, tidings: Side, baseline: Side, *, statement: str,
               anchor: str, goal: float | None = None, lean: Side | None = None,
               lean_statement: str = "", **extra: Any) -> dict[str, Any]:
    """One figure's entry (``extra`` adds context such as followers or workers)."""
    out = {"figure": figure, "unit": unit, **extra, "tidings": tidings.to_dict(),
           "baseline": {**baseline.to_dict(), "statement": statement, "anchor": anchor},
           "ratio": ratio(tidings.per_second, baseline.per_second), "goal_ratio": goal}
    if lean is not None:
        out["lean"] = {**lean.to_dict(), "statement": lean_statement}
        out["ratio_to_lean"] = ratio(tidings.per_second, lean.per_second)
    return out


def point(x: float, tidings: float, baseline: float | None) -> dict[str, Any]:
    """One point of a sweep's series."""
    return {"x": x, "tidings": round(tidings, 1),
            "baseline": round(baseline, 1) if baseline is not None else None,
            "ratio": ratio(tidings, baseline) if baseline is not None else None}


def fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def _latency(side: dict[str, Any], key: str) -> str:
    latency = side.get("latency")
    return fmt_ms(latency[key]) if latency else "—"


def comparison_table(title: str, comparisons: Sequence[dict[str, Any]]) -> Table:
    """``tidings | baseline | ratio`` per figure, then ``lean raw | tidings ÷ lean`` where
    some figure has a lean side, with p50/p90/p99 (tidings / baseline [/ lean], ms) where
    the figure is per request."""
    out = Table(title=title, title_justify="left")
    out.add_column("figure")
    with_lean = any("lean" in row for row in comparisons)
    columns = ["tidings", "baseline", "ratio", "goal"]
    if with_lean:
        columns += ["lean raw", "tidings ÷ lean"]
    for column in (*columns, "p50 ms", "p90 ms", "p99 ms"):
        out.add_column(column, justify="right")
    for row in comparisons:
        t, b, lean = row["tidings"], row["baseline"], row.get("lean")
        goal = row.get("goal_ratio")
        cells = [f"{row['figure']} ({row['unit']})", fmt_rate(t["per_second"]),
                 fmt_rate(b["per_second"]), fmt_ratio(row["ratio"]),
                 f"≥ {goal:g}x" if goal is not None else ""]
        if with_lean:
            cells += [fmt_rate(lean["per_second"]) if lean else "—",
                      fmt_ratio(row.get("ratio_to_lean"))]
        sides = [t, b, *([lean] if lean else [])]
        cells += [" / ".join(_latency(side, key) for side in sides) if t.get("latency")
                  else "—" for key in ("p50_ms", "p90_ms", "p99_ms")]
        out.add_row(*cells)
    return out


def sweep_table(title: str, sweep: dict[str, Any]) -> Table:
    """A sweep's series side by side: one row per (series, x)."""
    out = Table(title=title, title_justify="left")
    out.add_column("figure")
    out.add_column(sweep["x_label"], justify="right")
    for column in ("tidings /s", "baseline /s", "ratio"):
        out.add_column(column, justify="right")
    for name, points in sweep["series"].items():
        for p in points:
            out.add_row(name, f"{p['x']:,}", fmt_rate(p["tidings"]),
                        fmt_rate(p["baseline"]) if p["baseline"] is not None else "—",
                        fmt_ratio(p["ratio"]))
    return out
