"""``tidings bench inbox --sweep``: the inbox reads at growing inbox sizes (100 to 100,000 rows
for one user), which should stay flat: every read goes through an index to at most 100 (count)
or 20 (page) base rows, whatever the inbox holds.

Publishing 100,000 notifications to one user through fan-out jobs would take the sweep longer
than the rest of the bench, so the sweep users' inboxes are written in bulk (``COPY`` on
PostgreSQL, multi-row inserts elsewhere) with the rows fan-out would have written: events in the
W2 mix addressed to that one user, bundle and display hashes from
:mod:`tidings.domain.bundling` (``join_or_start``, every group unread while it grows, as in
W2's load; each group's summary on its base row as delivery keeps it), then the oldest 30 %
marked read with their groups, as ``mark_read`` does.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from rich.progress import Progress

from tidings.domain.bundling import (
    ACTOR_SCAN,
    Summary,
    bundle_hash,
    display_hash,
    summary_alone,
    summary_joined,
    summary_of,
)
from tidings.domain.events import Event, Limits, validate_event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.store.sql.core.hashes import to_sql
from tidings.store.sql.inbox import groups as groupsummary
from tidings_benchmarks.compare import point
from tidings_benchmarks.inbox_raw import RawInbox
from tidings_benchmarks.measure import Timed, median, time_each
from tidings_benchmarks.raw import RawConnection

SIZES = (100, 1_000, 10_000, 100_000)
STEP_US = 1_000  # the sweep's notifications arrived a millisecond apart
LIMITS = Limits()
EVENT_COLUMNS = ("id", "type", "actor", "object", "payload", "recipients", "exclude",
                 "body_hash", "created_at")
ROW_COLUMNS = ("user_id", "event_id", "created_at", "fresh_at", "type_id", "actor", "object",
               "bundle_hash", "display_hash", "bundle_base", "read_at",
               "joined", "group_count", "group_actors")
BASE, DISPLAY, READ_AT = ROW_COLUMNS.index("bundle_base"), ROW_COLUMNS.index("display_hash"), \
    ROW_COLUMNS.index("read_at")
SUMMARY = ROW_COLUMNS.index("group_count")  # and group_actors


def sweep_user(size: int) -> str:
    return f"sweep{size:07d}"


def inbox_of(user: str, size: int, events: Callable[[], Event], types: dict[str, EventType],
             first_id: int, now: int, read_share: float, type_ids: dict[str, int]
             ) -> tuple[list[tuple[Any, ...]], list[list[Any]]]:
    """The event rows and inbox rows of ``size`` notifications for ``user`` (``type_ids``:
    each type's id in the types dictionary)."""
    event_rows: list[tuple[Any, ...]] = []
    rows: list[list[Any]] = []
    newest: dict[str, tuple[str, int]] = {}  # bundle hash -> (its group, index of its base)
    # per group: its members' actors, oldest first, and its summary (what delivery keeps)
    members: dict[str, list[str | None]] = {}
    summaries: dict[str, Summary] = {}
    for i in range(size):
        event = events()
        if event.type == "edit-user-talk":
            event = dataclasses.replace(event, object=f"page:User_talk:{user}")
        event = dataclasses.replace(event, recipients=[user])
        event_id, created = first_id + i, now - (size - i) * STEP_US
        kind = types[event.type]
        event_rows.append((event_id, event.type, event.actor, event.object,
                           validate_event(event, LIMITS), json.dumps([user]), "[]",
                           event.body_hash(), created))
        bhash = bundle_hash(kind.bundle, event.type, event.actor, event.object, event_id)
        base = newest.get(bhash) if kind.bundle != "none" else None
        # every group is unread while it is written: a notification joins its bundle's newest
        group = base[0] if base is not None else display_hash(bhash, event_id)
        if base is not None:
            rows[base[1]][BASE] = False
            rows[base[1]][SUMMARY:SUMMARY + 2] = [None, None]
        newest[bhash] = (group, i)
        actors = members.setdefault(group, [])
        summary = (summary_alone(event.actor) if base is None
                   else summary_joined(summaries[group], event.actor)
                   or summary_of([event.actor, *actors[:-ACTOR_SCAN:-1]]))
        actors.append(event.actor)
        summaries[group] = summary
        count, names = groupsummary.encode(None if base is None else summary)
        rows.append([user, event_id, created, created, type_ids[kind.name],
                     event.actor, event.object, to_sql(bhash), to_sql(group), True, None,
                     base is not None,
                     count, names])
    read_groups = {row[DISPLAY] for row in rows[:round(size * read_share)]}
    for row in rows:
        if row[DISPLAY] in read_groups:
            row[READ_AT] = now
    return event_rows, rows


def load(t: Tidings, url: str, sizes: Sequence[int], events: Callable[[], Event],
         types: Sequence[EventType], read_share: float, progress: Progress) -> dict[int, str]:
    """Give one new user an inbox of each size; return the users by size."""
    users = {size: sweep_user(size) for size in sizes}
    task = progress.add_task("sweep: writing inboxes of " + ", ".join(f"{s:,}" for s in sizes),
                             total=sum(sizes))
    by_name = {kind.name: kind for kind in types}
    now = time.time_ns() // 1000
    for user in users.values():
        t.add_user(user, read_up_to=0)
    with RawConnection(url, autocommit=False) as raw:
        first_id = int(raw.fetch("SELECT COALESCE(MAX(id), 0) FROM events")[0][0]) + 1
        type_ids = {kind.name: raw.type_id(kind.name, kind.category, kind.section)
                    for kind in types}
        for size, user in users.items():
            event_rows, rows = inbox_of(user, size, events, by_name, first_id, now, read_share,
                                        type_ids)
            raw.write_rows("events", EVENT_COLUMNS, event_rows)
            raw.write_rows("notifications", ROW_COLUMNS, rows)
            raw.commit()
            first_id += size
            progress.advance(task, size)
        if raw.backend == "postgresql":  # ids were given explicitly: move the sequence on
            raw.fetch("SELECT setval(pg_get_serial_sequence('events', 'id'), "
                      "(SELECT MAX(id) FROM events))")
        raw.commit()
    progress.remove_task(task)
    return users


def run(t: Tidings, raw: RawInbox | None, users: dict[int, str], figures: Sequence[str],
        ops: int, rounds: int, first_page: Callable[[Tidings, str], None],
        progress: Progress) -> dict[str, Any]:
    """Time each read of each sweep user, tidings then baseline, for ``rounds`` rounds."""
    timed: dict[tuple[str, int, str], list[Timed]] = {}
    task = progress.add_task("sweep", total=rounds * len(users) * len(figures))
    for _ in range(rounds):
        for size, user in users.items():
            for figure in figures:
                ours: Callable[[], object] = (partial(t.unread_count, user)
                                              if figure == figures[0]
                                              else partial(first_page, t, user))
                timed.setdefault((figure, size, "tidings"), []).append(time_each([ours] * ops))
                if raw is not None:
                    theirs: Callable[[], object] = (partial(raw.unread_count, user)
                                                    if figure == figures[0]
                                                    else partial(raw.first_page, user))
                    timed.setdefault((figure, size, "baseline"), []).append(
                        time_each([theirs] * ops))
                progress.advance(task)
    progress.remove_task(task)

    def rate(figure: str, size: int, side: str) -> float | None:
        phases = timed.get((figure, size, side))
        return median([p.per_second for p in phases]) if phases else None

    series = {figure: [point(size, rate(figure, size, "tidings") or 0.0,
                             rate(figure, size, "baseline")) for size in users]
              for figure in figures}
    return {"x_label": "inbox size (rows)", "x_log": True, "unit": "requests/s",
            "series": series}
