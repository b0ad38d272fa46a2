"""A display group's summary on its base row (``notifications.group_count`` and
``group_actors``, migration 0022), and the read of groups' newest members it stands in for.

A page shows each listed group as "X and N others" with its member count
(:class:`tidings.domain.views.GroupInfo`): Echo's rule reads the group's newest 500 members
for it. Reading them on every page made the first page cost up to 500 index entries a listed
group, so a page grew with its groups. Delivery keeps the summary on the row it writes instead
(:func:`tidings.domain.bundling.summary_joined`, from the base it joins, while the group is
within the scan; :func:`fill` reads the newest members once it is past it), a demoted row
drops it, and a removal clears it on each group it touched (:func:`clear`). A page reads the
members only of a joined base row without one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, bindparam, select, text, true, tuple_, union_all, update

from tidings.domain.bundling import (
    ACTOR_SCAN,
    Summary,
    summary_alone,
    summary_of,
)
from tidings.domain.bundling import (
    group_info as info_of,
)
from tidings.domain.views import GroupInfo, NewNotification
from tidings.store.sql.core.database import Database
from tidings.store.sql.core.hashes import from_sql, pairs_to_sql, to_sql
from tidings.store.sql.schema import notifications

n = notifications.c
# what a base row says of its group: :func:`decode`'s arguments, in order
COLUMNS = (n.joined, n.actor, n.group_count, n.group_actors)
# groups a members statement reads at most (SQLite allows 500 terms in a compound SELECT)
MEMBER_GROUPS = 50
# the group index (migration 0021), named to MariaDB: where a user's rows are mostly one group,
# its estimates take the primary key's range of the user's rows and sort them all instead
GROUP_INDEX = "ix_notifications_display_hash_user_id_created_at_event_id_actor"
BATCH = 500
SEPARATOR = " "  # between the actors of ``group_actors`` (no user id holds one)


def decode(joined: Any, actor: str | None, count: int | None, actors: str | None
           ) -> Summary | None:
    """A base row's group summary: the row alone when it was never joined, the kept summary,
    or None when it keeps none (the group's members must be read)."""
    if not joined:
        return summary_alone(actor)
    if count is None:
        return None
    return count, tuple(actors.split(SEPARATOR)) if actors else ()


def encode(summary: Summary | None) -> tuple[int | None, str | None]:
    """The columns of ``summary``: none kept (the members are read) where it is unknown, or
    where an actor holds the separator (an actor id never does: ``check_user_id``)."""
    if summary is None or any(SEPARATOR in a for a in summary[1]):
        return None, None
    return summary[0], SEPARATOR.join(summary[1])


@lru_cache(maxsize=128)
def members_statement(groups: int) -> Any:
    """The newest ``ACTOR_SCAN`` members of ``groups`` display groups (``:u0``/``:g0`` …, a
    user and a display hash each, at most :data:`MEMBER_GROUPS`): (user, display hash,
    actor), each group's newest first. Each group is a range of the (display hash, user,
    created_at, event id, actor) index, read from its newest end (the index alone: it holds
    the actor) and cut at the limit, so a group costs at most ``ACTOR_SCAN`` entries whatever
    its size."""
    newest = [select(n.user_id, n.display_hash, n.actor, n.created_at, n.event_id)
              .where(n.user_id == bindparam(f"u{i}"), n.display_hash == bindparam(f"g{i}"))
              .order_by(n.created_at.desc(), n.event_id.desc()).limit(ACTOR_SCAN)
              .with_hint(notifications, f"FORCE INDEX ({GROUP_INDEX})", "mysql")
              .with_hint(notifications, f"FORCE INDEX ({GROUP_INDEX})", "mariadb")
              .subquery(f"m{i}") for i in range(groups)]
    each = [select(*group.c) for group in newest]
    found = (each[0] if len(each) == 1 else union_all(*each)).subquery("members")
    return (select(found.c.user_id, found.c.display_hash, found.c.actor, found.c.created_at,
                   found.c.event_id)
            .order_by(found.c.user_id, found.c.display_hash, found.c.created_at.desc(),
                      found.c.event_id.desc()))


def members_at(db: Database, conn: Any, pairs: Sequence[tuple[str, str]]
               ) -> dict[tuple[str, str], list[tuple[str | None, int, int]]]:
    """Each (user, display hash) group's newest ``ACTOR_SCAN`` members as (actor,
    created_at, event id), newest first (:func:`members_statement`, :data:`MEMBER_GROUPS`
    groups a statement); a group with no member is left out."""
    members: dict[tuple[str, str], list[tuple[str | None, int, int]]] = {}
    wanted = list(dict.fromkeys(pairs))
    for start in range(0, len(wanted), MEMBER_GROUPS):
        part = wanted[start:start + MEMBER_GROUPS]
        params: dict[str, Any] = {}
        for i, (user, group) in enumerate(part):  # run on the driver: hashes as BIGINTs
            params[f"u{i}"], params[f"g{i}"] = user, to_sql(group)
        for user, group, *member in db.fetch(conn, members_statement(len(part)), params):
            members.setdefault((user, from_sql(group)), []).append(
                (member[0], member[1], member[2]))
    return members


def members_of(db: Database, conn: Any, pairs: Sequence[tuple[str, str]]
               ) -> dict[tuple[str, str], list[str | None]]:
    """The actors of :func:`members_at`."""
    return {pair: [actor for actor, _, _ in found]
            for pair, found in members_at(db, conn, pairs).items()}


def fill(db: Database, conn: Connection, rows: Sequence[NewNotification]
         ) -> tuple[list[int | None], list[str | None]]:
    """The ``group_count`` and ``group_actors`` columns of ``rows``, about to be inserted: a
    joining row's summary as delivery worked it out; where it could not (past the scan, or
    the base kept none), its group's as it will be, from the group's newest members and the
    rows of that group inserted with it; none on a row that starts its group (``joined``
    says it is alone)."""
    unknown: dict[tuple[str, str], list[tuple[str | None, int, int]]] = {}
    for r in rows:
        if r.joined and r.group is None:
            unknown.setdefault((r.user_id, r.display_hash), []).append(
                (r.actor, r.created_at, r.event_id))
    worked: dict[tuple[str, str], Summary] = {}
    if unknown:
        stored = members_at(db, conn, list(unknown))
        for pair, added in unknown.items():
            merged = sorted({*added, *stored.get(pair, ())}, key=_place, reverse=True)
            worked[pair] = summary_of([actor for actor, _, _ in merged])
    counts: list[int | None] = []
    actors: list[str | None] = []
    for r in rows:
        summary = (r.group or worked[(r.user_id, r.display_hash)]) if r.joined else None
        count, text = encode(summary)
        counts.append(count)
        actors.append(text)
    return counts, actors


def _place(member: tuple[str | None, int, int]) -> tuple[int, int]:
    return member[1], member[2]


# PostgreSQL: the (user, display hash) groups of ``:groups`` (a JSON array) keep no summary;
# joined to the table, not a row-value IN list, whose planning grows with the list
CLEAR = text("""
UPDATE notifications AS n SET group_count = NULL, group_actors = NULL
FROM json_array_elements(CAST(:groups AS JSON)) AS k(v)
WHERE n.display_hash = CAST(k.v->>1 AS BIGINT) AND n.user_id = k.v->>0 AND n.bundle_base
  AND n.group_count IS NOT NULL""")


def clear(db: Database, conn: Connection, groups: Sequence[tuple[str, str]]) -> None:
    """The summaries of these (user, display hash) groups' base rows are no longer known (a
    removal touched the groups): their next page reads the members, their next join too."""
    wanted = sorted(set(groups))
    if db.backend == "postgresql" and wanted:  # one statement, a probe of the group index each
        db.run(conn, CLEAR, {"groups": json.dumps(pairs_to_sql(wanted))})
        return
    for start in range(0, len(wanted), BATCH):
        conn.execute(update(notifications)
                     .where(tuple_(n.user_id, n.display_hash).in_(wanted[start:start + BATCH]),
                            n.bundle_base == true(), n.group_count.is_not(None))
                     .values(group_count=None, group_actors=None))


def group_info(db: Database, conn: Connection, user: str, groups: Sequence[str]
               ) -> dict[str, GroupInfo]:
    """``InboxStore.group_info``: each of ``user``'s ``groups`` by its base row's summary, or
    by its newest members where the base row keeps none."""
    bases: dict[str, tuple[Any, ...]] = {}  # each group's newest base row
    for part in db.parts(list(dict.fromkeys(groups))):
        for found_row in conn.execute(
                select(n.display_hash, n.created_at, n.event_id, *COLUMNS)
                .where(n.user_id == user, db.among(n.display_hash, part),
                       n.bundle_base == true())):
            newest = bases.get(found_row[0])
            if newest is None or tuple(found_row[1:3]) > tuple(newest[1:3]):
                bases[found_row[0]] = tuple(found_row)
    found: dict[str, GroupInfo] = {}
    unknown: list[tuple[str, str]] = []
    for display, row in bases.items():
        summary = decode(*row[3:])
        if summary is None:
            unknown.append((user, display))
        else:
            found[display] = info_of(summary)
    for (_, group), actors in members_of(db, conn, unknown).items():
        found[group] = info_of(summary_of(actors))
    return found
