"""The first page of an unfiltered inbox (``InboxStore.page_view``) in one or two statements.

PostgreSQL: one statement: the user's watermarks, the base
rows with their events' payloads, and the newest members' actors of each listed row's display
group — what the three reads of :mod:`tidings.store.pageview` fetch in three round trips.

The watermarks come in an uncorrelated subquery, one row that the page is joined to (``LEFT
JOIN LATERAL``): every row carries them as JSON text, and an empty page is that row alone, with
no page columns, so a user with nothing listed still costs one statement. A row's group is its
summary where the base row keeps one (:mod:`.groups`), or the row alone where it started
its group and was never joined (``notifications.joined``); else its members come from a
correlated subquery on the (display hash, user, created_at, event id, actor) index (its newest
end, in the subquery's order, cut at the limit). Only pages that do not
filter on read state take this path: that filter needs the watermarks before the page's
condition can be written.

SQLite and MariaDB/MySQL (:func:`page_view`): the reads of
:mod:`tidings.store.pageview` (watermarks, base rows with payloads and their groups' summaries,
the newest members of the listed groups whose base row keeps no summary:
:mod:`.groups`) in at most two statements (the watermarks ride along with the rows, as
one JSON column; an empty page reads them alone), each built once per shape and run straight
on the driver (:meth:`Database.fetch`). On MariaDB the
watermarks' own round trip had been about 6 % of a page (925 → 872 µs).

Built per call through SQLAlchemy's execution, the three cost more in statement construction,
cache-key generation and result rows than in the database: on SQLite a page took about 2 ms
(cProfile: 78 rows fetched through SQLAlchemy's cursor, the page's statement built anew, the
member list's IN clause rendered anew). PostgreSQL takes the one-statement page above.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    String,
    and_,
    bindparam,
    case,
    cast,
    func,
    or_,
    select,
    true,
)

from tidings.domain.bundling import ACTOR_SCAN, group_info, summary_of
from tidings.domain.readstate import POSITION, Markers
from tidings.domain.views import GroupInfo, InboxRow, PageView
from tidings.store.sql.core.database import Database
from tidings.store.sql.core.hashes import from_sql
from tidings.store.sql.inbox import groups as groupsummary
from tidings.store.sql.inbox import types as inboxtypes
from tidings.store.sql.inbox.states import IN_INBOX
from tidings.store.sql.schema import events, inbox_types, notifications, read_markers

n = notifications.c
m = read_markers.c
# a row's type, category and section are its type's, from the types dictionary (joined)
ROW_COLUMNS = (n.event_id, n.user_id, n.created_at, n.fresh_at, *inboxtypes.NAMES, n.actor,
               n.object, n.bundle_hash, n.display_hash, n.read_at, events.c.payload, n.flags)
WIDTH = len(ROW_COLUMNS)  # InboxRow's fields, in order
HASHES_AT = tuple(i for i, c in enumerate(ROW_COLUMNS) if c.name.endswith("_hash"))


def from_driver(found: Iterable[Sequence[Any]]) -> list[Sequence[Any]]:
    """Rows of these statements as :meth:`Database.fetch` gives them (the hashes as the
    driver reads them, BIGINTs) with their hashes in the domain's form."""
    rows: list[Sequence[Any]] = []
    for r in found:
        if r[0] is None:  # the empty page's row
            rows.append(r)
            continue
        row = list(r)
        for at in HASHES_AT:
            row[at] = from_sql(row[at])
        rows.append(row)
    return rows


def statement(conditions: Sequence[ColumnElement[bool]], limit: int) -> Any:
    """The page under ``conditions`` (which must not depend on the watermarks) with a
    ``members`` array and a ``markers`` JSON text column; ``:user`` names the user."""
    member = notifications.alias("member")
    # ARRAY(subquery) keeps the subquery's order: no aggregate and no second sort per row;
    # only a joined row whose base keeps no summary runs it (a row never joined is its group)
    members = case((and_(n.joined, n.group_count.is_(None)), func.array(
        select(member.c.actor)
        .where(member.c.user_id == n.user_id, member.c.display_hash == n.display_hash)
        .order_by(member.c.created_at.desc(), member.c.event_id.desc())
        .limit(ACTOR_SCAN).correlate(notifications).scalar_subquery())))
    marks = select(select(cast(func.json_agg(func.json_build_array(
        m.scope, m.until_at, m.position_at, m.position_id)), String)).where(
        m.user_id == bindparam("user")).scalar_subquery().label("markers")).subquery("marks")
    page = (select(*ROW_COLUMNS, members.label("members"), n.joined, n.group_count,
                   n.group_actors)
            .join_from(notifications, events, events.c.id == n.event_id)
            .join(inbox_types, inbox_types.c.id == n.type_id)
            .where(*conditions)
            .order_by(n.created_at.desc(), n.event_id.desc())
            .limit(limit)
            .lateral("page"))
    # no ORDER BY out here (a Sort node over the page): view() puts the rows in order
    return select(*page.c, marks.c.markers).select_from(marks.outerjoin(page, true()))


def unfiltered_conditions(keyset: bool) -> list[ColumnElement[bool]]:
    """An unfiltered page's conditions (the inbox: neither archived nor snoozed) as bound
    parameters: ``:user``, and with ``keyset``
    ``:before_at`` and ``:before_id`` (strictly before that place)."""
    conditions: list[ColumnElement[bool]] = [n.user_id == bindparam("user"),
                                             n.bundle_base == true(), IN_INBOX]
    if keyset:
        created: Any = bindparam("before_at")
        event_id: Any = bindparam("before_id")
        conditions.append(or_(n.created_at < created,
                              and_(n.created_at == created, n.event_id < event_id)))
    return conditions


@cache
def unfiltered(keyset: bool, limit: int) -> Any:
    """The statement of an unfiltered page (the common one), built once per shape so neither
    its construction nor its compilation is paid per request (:func:`unfiltered_conditions`)."""
    return statement(unfiltered_conditions(keyset), limit)


def markers_of(text: str | None) -> Markers:
    """Markers from the ``markers`` column: [[scope, until, position at, position id], …]."""
    rows: list[list[Any]] = json.loads(text) if text else []
    position = next(((r[2], r[3]) for r in rows if r[0] == POSITION and r[2] is not None), None)
    return Markers.from_rows({r[0]: r[1] for r in rows}, position)


def group_of(members: Sequence[str | None]) -> GroupInfo:
    """The group info of a group whose newest members (newest first) have these actors."""
    return group_info(summary_of(members))


def view(found: Iterable[Sequence[Any]], bundles: Callable[[str], bool],
         fallback: Callable[[], Markers]) -> PageView:
    """The page view from a :func:`statement`'s rows (by position: the row columns, then
    ``members``, the group summary's columns and ``markers``; an empty page is one row of the
    markers alone, its event id null); ``fallback`` reads the markers when there is no row at
    all."""
    rows: list[InboxRow] = []
    groups: dict[str, GroupInfo] = {}
    marks: str | None = None
    read = False
    for r in found:
        if not read:
            marks, read = r[WIDTH + 4], True
        if r[0] is None:  # the empty page's row
            continue
        row = InboxRow(*r[:WIDTH])
        rows.append(row)
        if bundles(row.type) and row.display_hash not in groups:  # by its newest base row
            summary = groupsummary.decode(r[WIDTH + 1], row.actor, r[WIDTH + 2], r[WIDTH + 3])
            groups[row.display_hash] = (group_of(r[WIDTH] or []) if summary is None
                                        else group_info(summary))
    # newest first, as the lateral page has them (the join keeps them so in practice; this
    # makes it certain, at the cost of one pass over rows already in order)
    rows.sort(key=_place, reverse=True)
    return PageView(markers_of(marks) if read else fallback(), rows, groups)


def _place(row: InboxRow) -> tuple[int, int]:
    return row.created_at, row.event_id


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
            .join(inbox_types, inbox_types.c.id == n.type_id)
            .where(*unfiltered_conditions(keyset))
            .order_by(n.created_at.desc(), n.event_id.desc()).limit(limit))


def page_view(db: Database, conn: Any, user: str, *, limit: int,
              before: tuple[int, int] | None, bundles: Callable[[str], bool]) -> PageView:
    """What :func:`tidings.store.pageview.page_view` reads for an unfiltered page: the
    rows with the watermarks, the watermarks alone for an empty page, the groups' members."""
    params: dict[str, Any] = {"user": user}
    if before is not None:
        params["before_at"], params["before_id"] = before
    found = from_driver(db.fetch(conn, rows_statement(db.backend, before is not None, limit),
                                 params))
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
