"""W2's storage figure: bytes on disk per notification row, indexes included.

Measured once the W2 data set is loaded and the statistics refreshed (``VACUUM ANALYZE`` on
PostgreSQL), with :mod:`tidings_benchmarks.storage`. Three figures, each divided by the number of
notification rows:

* ``notifications`` — the inbox table itself with its primary key and indexes: one row per
  (user, event), what BENCH.md's ≤ 100 B/row goal and django-notifications-hq's 195 B/row
  anchor (its one ``notifications_notification`` table with 11 indexes) are about;
* ``with events`` — plus the events the rows point to (``events``, ``event_fields``), shared
  by their recipients (django-notifications-hq keeps them in each row);
* ``every inbox table`` — plus who received each event (``deliveries``) and the per-user
  state (``read_markers``, ``inbox_open``).

With ``--baseline`` the lean layout's tables (:mod:`tidings_benchmarks.lean_raw`), filled with
the same notifications, are measured the same way (``lean``: every lean table, per
notification).

The profile splits the ``notifications`` figure by relation (the rows, each index) and, on
PostgreSQL, gives each column's average width from ``pg_stats`` (after ``ANALYZE``), so the
index or column that costs most can be named.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from tidings_benchmarks import BenchFailure, inbox_django
from tidings_benchmarks.raw import RawConnection
from tidings_benchmarks.storage import relation_bytes, table_bytes

GOAL_BYTES = 100
ANCHOR_BYTES = 195
ANCHOR = "django-notifications-hq 1.8.3 on PostgreSQL: 195 B/row (11 indexes), BENCH.md W2"
FIGURES = (
    ("notifications", ("notifications",)),
    ("with events", ("notifications", "events", "event_fields")),
    ("every inbox table", ("notifications", "deliveries", "events", "event_fields",
                           "read_markers", "inbox_open")),
)


def measure(url: str, rows: int, *, baseline: bool = False) -> dict[str, Any]:
    """The storage figures of the store at ``url`` holding ``rows`` notifications; with
    ``baseline``, on PostgreSQL, those of the same rows in django-notifications-hq's table
    (:mod:`tidings_benchmarks.inbox_django`) too."""
    sizes = table_bytes(url, FIGURES[-1][1])
    figures = [{"figure": name, "tables": list(tables),
                "bytes": sum(sizes[table] for table in tables),
                "bytes_per_row": per_row(sum(sizes[table] for table in tables), rows)}
               for name, tables in FIGURES]
    relations = relation_bytes(url, "notifications")
    profile = [{"relation": name, "bytes": size, "bytes_per_row": per_row(size, rows)}
               for name, size in sorted(relations.items(), key=lambda item: -item[1])]
    main = per_row(sizes["notifications"], rows)
    theirs = inbox_django.measure(url) if baseline else None
    if theirs is not None and theirs["rows"] != rows:
        raise BenchFailure(f"{theirs['rows']:,} rows in the django-like table for {rows:,}")
    base = theirs["bytes_per_row"] if theirs is not None else None
    for figure in figures[:2]:
        figure["ratio_to_baseline"] = (round(figure["bytes_per_row"] / base, 2)
                                       if base and figure["bytes_per_row"] is not None
                                       else None)
    return {"rows": rows, "table_bytes": sizes, "figures": figures, "baseline": theirs,
            "bytes_per_row": main, "goal_bytes_per_row": GOAL_BYTES,
            "anchor_bytes_per_row": ANCHOR_BYTES, "anchor": ANCHOR,
            "ratio_to_anchor": round(main / ANCHOR_BYTES, 2) if main is not None else None,
            "goal_met": main <= GOAL_BYTES if main is not None else None,
            "profile": profile, "column_widths": column_widths(url, "notifications")}


def per_row(size: int, rows: int) -> float | None:
    return round(size / rows, 1) if rows else None


def column_widths(url: str, table: str) -> dict[str, int] | None:
    """Each column's average stored width in bytes (PostgreSQL's ``pg_stats.avg_width``, as
    of the last ``ANALYZE``); None on other backends."""
    with RawConnection(url) as raw:
        if raw.backend != "postgresql":
            return None
        rows = raw.fetch("SELECT attname, avg_width FROM pg_stats WHERE schemaname = "
                         "current_schema() AND tablename = %s ORDER BY avg_width DESC",
                         (table,))
    return {str(name): int(width) for name, width in rows}


def table(storage: dict[str, Any], title: str) -> Table:
    """Bytes per notification row beside the anchor and the goal, then the profile."""
    out = Table(title=f"{title}: bytes on disk per notification row "
                      f"({storage['rows']:,} rows, indexes included)", title_justify="left")
    out.add_column("figure (tables with their indexes)")
    for column in ("MB", "B/row", "baseline B/row", "ratio", "anchor B/row", "vs anchor",
                   "goal"):
        out.add_column(column, justify="right")
    theirs = storage.get("baseline")
    shown: list[str] = []
    for i, row in enumerate(storage["figures"]):
        b = row["bytes_per_row"]
        added = [name for name in row["tables"] if name not in shown]
        shown += added
        label = ", ".join(added) if i == 0 else f"{row['figure']}: + {', '.join(added)}"
        ratio = row.get("ratio_to_baseline")
        out.add_row(label, f"{row['bytes'] / 1e6:,.2f}", _b(b),
                    _b(theirs["bytes_per_row"]) if theirs and i < 2 else "",
                    f"{ratio:.2f}x" if ratio is not None else "",
                    f"{ANCHOR_BYTES}" if i == 0 else "",
                    f"{b / ANCHOR_BYTES:.2f}x" if b is not None and i == 0 else "",
                    f"≤ {GOAL_BYTES}" if i == 0 else "")
    for row in storage["profile"]:
        out.add_row(f"  notifications: {row['relation']}", f"{row['bytes'] / 1e6:,.2f}",
                    _b(row["bytes_per_row"]), "", "", "", "", "")
    if theirs:
        out.add_row("baseline: django-notifications-hq's table, same rows",
                    f"{theirs['bytes'] / 1e6:,.2f}", "",
                    _b(theirs["bytes_per_row"]), "", "", "", "")
        for row in theirs["profile"]:
            out.add_row(f"  {row['relation']}", f"{row['bytes'] / 1e6:,.2f}", "",
                        _b(row["bytes_per_row"]), "", "", "", "")
    lean = storage.get("lean")
    if lean:
        every = storage["figures"][-1]["bytes_per_row"]
        times = f"{every / lean['bytes_per_row']:.1f}x" if every and lean["bytes_per_row"] else ""
        out.add_row(f"lean raw: every lean table (tidings' every inbox table ÷ lean: {times})",
                    f"{lean['bytes'] / 1e6:,.2f}", _b(lean["bytes_per_row"]), "", "", "", "",
                    "")
        rows = storage["rows"]
        for name, size in sorted(lean["tables"].items(), key=lambda item: -item[1]):
            out.add_row(f"  {name}", f"{size / 1e6:,.2f}", _b(per_row(size, rows)), "", "", "",
                        "", "")
    widths = storage.get("column_widths")
    if widths:
        out.caption = "average column widths (pg_stats, B): " + ", ".join(
            f"{name} {width}" for name, width in widths.items())
    return out


def _b(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"
