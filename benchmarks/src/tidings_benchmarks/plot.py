"""``--plot FILE.png``: a bench's ratios as bars and, after ``--sweep``, its curves.

matplotlib is optional (the ``plot`` extra): :func:`require` says how to get it
before a bench starts, rather than after it has run for minutes. It is imported as a plain
module (``Any``), so type-checking the benchmarks never needs it installed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

INSTALL = "pip install -e './benchmarks[plot]' (from a checkout of tidings)"


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def require() -> Any:
    """matplotlib's pyplot on the non-interactive Agg backend, or :class:`PlotUnavailable`."""
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        raise PlotUnavailable(f"--plot needs matplotlib, which is not installed: "
                              f"{INSTALL}") from None
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def draw(result: dict[str, Any], path: Path) -> None:
    """Write ``result``'s chart to ``path`` (PNG): one panel of bars (ratios to the baseline
    or, without one, tidings' rates) and, if the result has a sweep, one of curves."""
    plt = require()
    if result.get("models"):
        _draw_models(plt, result, path)
        return
    sweep = result.get("sweep")
    panels = 2 if sweep else 1
    fig, axes = plt.subplots(panels, 1, figsize=(10, 4.5 * panels), squeeze=False)
    title = f"{result['workload']} — {result['backend']} ({result['environment']['at']})"
    if result.get("comparisons"):
        _ratio_bars(axes[0][0], result["comparisons"])
    else:
        _rate_bars(axes[0][0], result.get("results", []))
    if sweep:
        _curves(axes[1][0], sweep)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _draw_models(plt: Any, result: dict[str, Any], path: Path) -> None:
    """W1: one panel per graph, each figure's rate with the models side by side (log scale),
    then the ratios to the seed's SQL when there are some."""
    graphs = result["models"]
    compared = bool(result.get("comparisons"))
    rows = len(graphs) + (1 if compared else 0)
    fig, axes = plt.subplots(rows, 1, figsize=(10, 4.2 * rows), squeeze=False)
    for ax, (graph, figures) in zip((row[0] for row in axes), graphs.items(), strict=False):
        models = list(dict.fromkeys(m for rates in figures.values() for m in rates))
        width = 0.8 / max(1, len(models))
        colours = plt_colours()
        for i, model in enumerate(models):
            xs = [n + (i - (len(models) - 1) / 2) * width for n in range(len(figures))]
            values = [rates.get(model, 0.0) for rates in figures.values()]
            bars = ax.bar(xs, values, width, label=model, color=colours[i])
            ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=7)
        ax.set_xticks(range(len(figures)), list(figures))
        ax.set_yscale("log")
        ax.set_ylabel("per second (tidings)")
        ax.set_title(f"{graph} graph", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    if compared:
        _ratio_bars(axes[-1][0], result["comparisons"])
    fig.suptitle(f"{result['workload']} — {result['backend']} ({result['environment']['at']})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _ratio_bars(ax: Any, comparisons: list[dict[str, Any]]) -> None:
    labels = [row["figure"] for row in comparisons]
    ratios = [row["ratio"] or 0.0 for row in comparisons]
    positions = list(range(len(labels)))
    colours = ["tab:green" if row.get("goal_ratio") is not None and (row["ratio"] or 0)
               >= row["goal_ratio"] else "tab:blue" for row in comparisons]
    ax.barh(positions, ratios, color=colours)
    for y, row in zip(positions, comparisons, strict=True):
        if row.get("goal_ratio") is not None:
            ax.plot([row["goal_ratio"]] * 2, [y - 0.4, y + 0.4], color="tab:red", lw=2)
        ax.annotate(f" {row['ratio'] or 0:.2f}x", (row["ratio"] or 0, y), va="center",
                    fontsize=8)
    ax.axvline(1.0, color="grey", ls="--", lw=1)
    ax.set_yticks(positions, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("tidings / baseline (same run; 1.0 = the raw statements; red: goal)")


def _rate_bars(ax: Any, results: list[dict[str, Any]]) -> None:
    labels = [str(r.get("figure") or f"{r['subscribers']:,} followers, {r['workers']} "
                                      "worker(s)") for r in results]
    values = [r.get("per_second", r.get("deliveries_per_second", 0.0)) for r in results]
    ax.barh(range(len(results)), values, color="tab:blue")
    ax.set_yticks(range(len(results)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("tidings, per second (run with --baseline for ratios)")


def _curves(ax: Any, sweep: dict[str, Any]) -> None:
    colours = iter(plt_colours())
    for name, points in sweep["series"].items():
        colour = next(colours)
        xs = [p["x"] for p in points]
        ax.plot(xs, [p["tidings"] for p in points], marker="o", color=colour,
                label=f"{name}: tidings")
        if any(p["baseline"] is not None for p in points):
            ax.plot(xs, [p["baseline"] for p in points], marker="s", ls="--", color=colour,
                    label=f"{name}: baseline")
    if sweep.get("x_log"):
        ax.set_xscale("log")
    ticks = sorted({p["x"] for points in sweep["series"].values() for p in points})
    ax.set_xticks(ticks, [f"{x:,}" for x in ticks])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel(sweep["x_label"])
    ax.set_ylabel(sweep.get("unit", "per second"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def plt_colours() -> list[str]:
    return [f"tab:{c}" for c in ("blue", "orange", "green", "red", "purple", "brown", "pink",
                                 "olive", "cyan", "grey")] * 4
