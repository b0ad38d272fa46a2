"""What every bench writes: its settings, the machine, and its results, as JSON."""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tidings


def environment() -> dict[str, Any]:
    """Enough about the run to compare two JSON files later."""
    return {
        "tidings": tidings.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }


def header(workload: str, settings: Any, backend: str, **more_settings: Any) -> dict[str, Any]:
    """The first fields of a bench's JSON: what ran, where, with which settings (a dataclass
    with a ``store``, shown without its password), on which machine."""
    from dataclasses import asdict

    from tidings_benchmarks.stores import redacted

    return {
        "workload": workload,
        "store": redacted(settings.store) if settings.store else "sqlite (temporary file)",
        "backend": backend,
        "settings": {**{k: v for k, v in asdict(settings).items() if k != "store"},
                     **more_settings},
        "environment": environment(),
    }


def write_json(path: Path, result: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def fmt_ms(value: float) -> str:
    return f"{value:,.2f}"
