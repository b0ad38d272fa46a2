"""The first page of an unfiltered inbox on SQLite and MariaDB/MySQL: the reads of
:mod:`tidings.store.pageview` (watermarks, base rows with payloads and their groups' summaries,
the newest members of the listed groups whose base row keeps no summary:
:mod:`.groupsummary`) in at most two statements (the watermarks ride along with the rows, as
one JSON column; an empty page reads them alone), each built once per shape and run straight
on the driver (:meth:`Database.fetch`). On MariaDB the
watermarks' own round trip had been about 6 % of a page (925 → 872 µs).

Built per call through SQLAlchemy's execution, the three cost more in statement construction,
cache-key generation and result rows than in the database: on SQLite a page took about 2 ms
(cProfile: 78 rows fetched through SQLAlchemy's cursor, the page's statement built anew, the
member list's IN clause rendered anew). PostgreSQL takes the one-statement page of
:mod:`tidings.store.sql.pageview` instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

from sqlalchemy import bindparam, func, select

from tidings.domain.bundling import group_info
from tidings.domain.readstate import POSITION, Markers
from tidings.domain.views import GroupInfo, InboxRow, PageView
from tidings.store.sql import groupsummary
from tidings.store.sql.database import Database
from tidings.store.sql.pageview import ROW_COLUMNS, WIDTH, group_of, unfiltered_conditions
from tidings.store.sql.schema import events, notifications, read_markers

n = notifications.c
m = read_markers.c
SUMMARY = (n.joined, n.group_count, n.group_actors)  # with the row's actor: the group's summary
MARKERS = select(m.scope, m.until_at, m.position_at, m.position_id).where(
    m.user_id == bindparam("user"))


# the user's watermark rows as one JSON array of MARKERS' columns, per backend
_AGGREGATE = {"mysql": func.json_arrayagg, "sqlite": func.json_group_array}


@cache
def rows_statement(backend: str, keyset: bool, limit: int) -> Any:
    """The unfiltered page's base rows with their payloads, newest first, each with the
    user's watermarks (:data:`MARKERS`' rows as one JSON text: the server reads them once, and
    a page is a round trip fewer); ``:user``, and with ``keyset`` ``:before_at`` /
    ``:before_id`` (strictly before that place)."""
    marks = (select(_AGGREGATE[backend](func.json_array(*MARKERS.selected_columns)))
             .where(m.user_id == bindparam("user")).scalar_subquery())
    return (select(*ROW_COLUMNS, *SUMMARY, marks)
            .join_from(notifications, events, events.c.id == n.event_id)
            .where(*unfiltered_conditions(keyset))
            .order_by(n.created_at.desc(), n.event_id.desc()).limit(limit))


def page_view(db: Database, conn: Any, user: str, *, limit: int,
              before: tuple[int, int] | None, bundles: Callable[[str], bool]) -> PageView:
    """What :func:`tidings.store.pageview.page_view` reads for an unfiltered page: the
    rows with the watermarks, the watermarks alone for an empty page, the groups' members."""
    params: dict[str, Any] = {"user": user}
    if before is not None:
        params["before_at"], params["before_id"] = before
    found = db.fetch(conn, rows_statement(db.backend, before is not None, limit), params)
    marks = (json.loads(found[0][WIDTH + len(SUMMARY)] or "[]") if found
             else db.fetch(conn, MARKERS, {"user": user}))
    position = next(((r[2], r[3]) for r in marks if r[0] == POSITION and r[2] is not None),
                    None)
    markers = Markers.from_rows({r[0]: r[1] for r in marks}, position)
    rows = [InboxRow(*r[:WIDTH]) for r in found]
    # a group's summary where its base row keeps one (or is the group alone); else its members
    groups: dict[str, GroupInfo] = {}
    wanted: list[tuple[str, str]] = []
    for row, r in zip(rows, found, strict=True):  # a group by its newest base row
        if bundles(row.type) and row.display_hash not in groups:
            summary = groupsummary.decode(r[WIDTH], row.actor, r[WIDTH + 1], r[WIDTH + 2])
            if summary is None:
                wanted.append((user, row.display_hash))
            else:
                groups[row.display_hash] = group_info(summary)
    for (_, group), actors in groupsummary.members_of(db, conn, wanted).items():
        groups[group] = group_of(actors)
    return PageView(markers, rows, groups)
