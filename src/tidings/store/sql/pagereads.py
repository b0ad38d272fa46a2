"""The first page of an unfiltered inbox on SQLite and MariaDB/MySQL: the reads of
:mod:`tidings.store.pageview` (watermarks, base rows with payloads, the listed groups' newest
members, for the rows that were joined: ``notifications.joined``) in two statements (the
watermarks ride along with the rows, as one JSON column; an empty page reads them alone), each
built once per shape and run straight on the driver (:meth:`Database.fetch`). On MariaDB the
watermarks' own round trip had been about 6 % of a page (925 → 872 µs).

Built per call through SQLAlchemy's execution, the three cost more in statement construction,
cache-key generation and result rows than in the database: on SQLite a page took about 2 ms
(cProfile: 78 rows fetched through SQLAlchemy's cursor, the page's statement built anew, the
member list's IN clause rendered anew). PostgreSQL takes the one-statement page of
:mod:`tidings.store.sql.pageview` instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Any

from sqlalchemy import bindparam, func, select, union_all

from tidings.domain.bundling import ACTOR_SCAN
from tidings.domain.readstate import POSITION, Markers
from tidings.domain.views import GroupInfo, InboxRow, PageView
from tidings.store.sql.database import Database
from tidings.store.sql.pageview import ROW_COLUMNS, WIDTH, group_of, unfiltered_conditions
from tidings.store.sql.schema import events, notifications, read_markers

n = notifications.c
m = read_markers.c
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
    return (select(*ROW_COLUMNS, n.joined, marks)
            .join_from(notifications, events, events.c.id == n.event_id)
            .where(*unfiltered_conditions(keyset))
            .order_by(n.created_at.desc(), n.event_id.desc()).limit(limit))


# groups a members statement reads at most (SQLite allows 500 terms in a compound SELECT)
MEMBER_GROUPS = 50
# the group index (migration 0021), named to MariaDB: where a user's rows are mostly one group,
# its estimates take the primary key's range of the user's rows and sort them all instead
GROUP_INDEX = "ix_notifications_display_hash_user_id_created_at_event_id_actor"


@lru_cache(maxsize=128)
def members_statement(groups: int) -> Any:
    """The newest ``ACTOR_SCAN`` members of ``groups`` display groups (``:g0`` …, at most
    :data:`MEMBER_GROUPS`): (display hash, actor), each group's newest first. Each group is a
    range of the (display hash, user, created_at, event id, actor) index, read from its newest
    end (the index alone: it holds the actor) and cut at the limit, so a group costs at most
    ``ACTOR_SCAN`` entries whatever its size, where a window numbering each group's members
    (``row_number() OVER …``) read every member of the listed groups to keep their first 500."""
    newest = [select(n.display_hash, n.actor, n.created_at, n.event_id)
              .where(n.user_id == bindparam("user"), n.display_hash == bindparam(f"g{i}"))
              .order_by(n.created_at.desc(), n.event_id.desc()).limit(ACTOR_SCAN)
              .with_hint(notifications, f"FORCE INDEX ({GROUP_INDEX})", "mysql")
              .with_hint(notifications, f"FORCE INDEX ({GROUP_INDEX})", "mariadb")
              .subquery(f"m{i}") for i in range(groups)]
    each = [select(*group.c) for group in newest]
    found = (each[0] if len(each) == 1 else union_all(*each)).subquery("members")
    return (select(found.c.display_hash, found.c.actor)
            .order_by(found.c.display_hash, found.c.created_at.desc(), found.c.event_id.desc()))


def members_of(db: Database, conn: Any, user: str, groups: Sequence[str]
               ) -> dict[str, list[str | None]]:
    """Each of ``groups``' newest ``ACTOR_SCAN`` members' actors, newest first
    (:func:`members_statement`, :data:`MEMBER_GROUPS` groups a statement)."""
    members: dict[str, list[str | None]] = {}
    wanted = list(dict.fromkeys(groups))
    for start in range(0, len(wanted), MEMBER_GROUPS):
        part = wanted[start:start + MEMBER_GROUPS]
        params: dict[str, Any] = {"user": user}
        params.update((f"g{i}", group) for i, group in enumerate(part))
        for group, actor in db.fetch(conn, members_statement(len(part)), params):
            members.setdefault(group, []).append(actor)
    return members


def page_view(db: Database, conn: Any, user: str, *, limit: int,
              before: tuple[int, int] | None, bundles: Callable[[str], bool]) -> PageView:
    """What :func:`tidings.store.pageview.page_view` reads for an unfiltered page: the
    rows with the watermarks, the watermarks alone for an empty page, the groups' members."""
    params: dict[str, Any] = {"user": user}
    if before is not None:
        params["before_at"], params["before_id"] = before
    found = db.fetch(conn, rows_statement(db.backend, before is not None, limit), params)
    marks = (json.loads(found[0][WIDTH + 1] or "[]") if found
             else db.fetch(conn, MARKERS, {"user": user}))
    position = next(((r[2], r[3]) for r in marks if r[0] == POSITION and r[2] is not None),
                    None)
    markers = Markers.from_rows({r[0]: r[1] for r in marks}, position)
    rows = [InboxRow(*r[:WIDTH]) for r in found]
    # a row that started its group and was never joined is the group: no members to read
    alone = {row.display_hash: group_of([row.actor])
             for row, r in zip(rows, found, strict=True) if not r[WIDTH] and bundles(row.type)}
    wanted = list(dict.fromkeys(r.display_hash for r in rows
                                if bundles(r.type) and r.display_hash not in alone))
    return PageView(markers, rows, {**alone, **_groups(db, conn, user, wanted)})


def _groups(db: Database, conn: Any, user: str, wanted: Sequence[str]
            ) -> dict[str, GroupInfo]:
    return {group: group_of(actors)
            for group, actors in members_of(db, conn, user, wanted).items()}
