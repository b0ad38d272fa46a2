"""The pull model's read on SQL: the newest events of each followee, merged in the database.

PostgreSQL runs one statement: the followees (two array parameters, ``unnest``) joined
``LATERAL`` to their newest ``limit`` events through the (actor, id) index. SQLite and MariaDB
(no LATERAL) run a ``UNION ALL`` of one ``ORDER BY id DESC LIMIT n`` subquery of ids per
followee, :data:`GROUP` followees a statement, and join only the page's ids to ``events``: the
merge sorts ids, not whole rows. On SQLite each subquery reads the index on (actor, type,
retracted_at) alone, its entries carrying the id: no row of ``events`` is read but the
page's (migration 0018).

MariaDB spends more in planning each of those subqueries than in running it (about 60 µs a
followee: 43 followees, 3.3 ms a read, where the seed's own pull took 1.5). It reads instead
each followee's newest id in one statement (``GROUP BY actor`` over the index on (actor, type,
retracted_at), which it reads by skipping from followee to followee); the ``limit``-th highest
of those ids is a floor under the page, since that many followees hold an event at or above
it; a second statement then takes the newest ids at or above the floor of the followees that
reach it (one range of the same index each, no subquery a followee) and joins only the page's
to ``events``. With fewer followees holding anything than a page holds, there is no floor: the
``UNION ALL`` above, for those followees (for all of them at once, without the first
statement, when there are fewer followees than that).

Every statement is built once per shape (backend, followees in the group, types, which bounds,
limit) and run straight on the driver (:meth:`Database.fetch`, prepared by psycopg): a read
pays neither the construction of ~40 subqueries nor their compilation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    String,
    TextClause,
    any_,
    bindparam,
    column,
    func,
    select,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY

from tidings.domain.views import StoredEvent
from tidings.store.sql.database import Database
from tidings.store.sql.schema import events

GROUP = 200  # followees per statement on backends without LATERAL
e = events.c
COLUMNS = (e.id, e.type, e.actor, e.object, e.payload, e.recipients, e.exclude,
           e.idempotency_key, e.body_hash, e.created_at, e.retracted_at)


def stored_event(row: Sequence[Any]) -> StoredEvent:
    """A row of :data:`COLUMNS` as the event it stores."""
    (id_, type_, actor, object_, payload, recipients, exclude, key, body_hash, created_at,
     retracted_at) = row
    return StoredEvent(
        id=id_, type=type_, actor=actor, object=object_, payload=json.loads(payload),
        recipients=json.loads(recipients), exclude=json.loads(exclude), idempotency_key=key,
        body_hash=body_hash, created_at=created_at, retracted_at=retracted_at,
    )


def _common(types: ColumnElement[bool], below: bool, above: bool
            ) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = [e.retracted_at.is_(None), types]
    if below:
        where.append(e.id < bindparam("below", type_=BigInteger))
    if above:
        where.append(e.id > bindparam("above", type_=BigInteger))
    return where


@lru_cache(maxsize=64)
def lateral(below: bool, above: bool, limit: int) -> Any:
    """PostgreSQL's statement: ``:actors`` and ``:cuts`` (arrays of the followees and the
    highest id to take of each), ``:types`` (an array), ``:below`` / ``:above``."""
    src = func.unnest(bindparam("actors", type_=ARRAY(String)),
                      bindparam("cuts", type_=ARRAY(BigInteger))
                      ).table_valued(column("actor", String), column("cut", BigInteger)
                                     ).render_derived(name="src")
    types = e.type == any_(bindparam("types", type_=ARRAY(String)))
    newest = (select(*COLUMNS).where(e.actor == src.c.actor, e.id <= src.c.cut,
                                     *_common(types, below, above))
              .order_by(e.id.desc()).limit(limit).lateral("newest"))
    return (select(newest).select_from(src.join(newest, true()))
            .order_by(newest.c.id.desc()).limit(limit))


@lru_cache(maxsize=512)
def union(sources: int, types: int, below: bool, above: bool, limit: int,
          wrapped: bool = False) -> TextClause:
    """The statement for ``sources`` followees without LATERAL: ``:a0``… and ``:c0``… (each
    followee and the highest id to take of it), ``:t0``… (the types), ``:below`` /
    ``:above``; ``wrapped``: each followee's part as a subquery, reading the index
    ``(actor, type, retracted_at)`` by name (SQLite, whose planner may take the (actor, id)
    one and then read every row), not in parentheses (MariaDB). Only ids go through the
    ``UNION ALL`` and its sort; the page's ``limit`` rows are then joined to ``events``.
    Merging whole rows, MariaDB kept a derived table with a TEXT column (the payload) on
    disk: a read of 43 followees took 35 to 86 ms against about 5; SQLite merges the parts'
    ids as they come, in order (a read of 43 followees 0.3 ms, against 1.3 to 1.6 ms joining
    every followee's rows before the sort)."""
    kinds = ", ".join(f":t{j}" for j in range(types))
    bounds = _bounds(below, above)
    n = int(limit)
    index = " INDEXED BY ix_events_actor_type_retracted_at" if wrapped else ""
    inner = (f"SELECT id FROM events{index} WHERE actor = :a{{i}} AND id <= :c{{i}}"
             f" AND retracted_at IS NULL AND type IN ({kinds}){bounds}"
             f" ORDER BY id DESC LIMIT {n}")
    part = f"SELECT id FROM ({inner}) AS p{{i}}" if wrapped else f"({inner})"
    parts = " UNION ALL ".join(part.format(i=i) for i in range(sources))
    names = ", ".join(f"e.{c.name}" for c in COLUMNS)
    return text(f"""
SELECT {names} FROM (SELECT id FROM ({parts}) AS newest ORDER BY id DESC LIMIT {n}) AS page
JOIN events e ON e.id = page.id
ORDER BY e.id DESC""")


def pull_page(db: Database, conn: Connection, sources: Sequence[tuple[str, int]], *,
              types: Sequence[str], limit: int, below: int | None, above: int | None
              ) -> list[StoredEvent]:
    """See ``EventStore.pull_page``."""
    if not sources or not types or limit <= 0:
        return []
    bounds: dict[str, Any] = {}
    if below is not None:
        bounds["below"] = below
    if above is not None:
        bounds["above"] = above
    if db.backend == "postgresql":
        return [stored_event(r) for r in db.fetch(conn, lateral(below is not None,
                                                           above is not None, limit), {
            "actors": [a for a, _ in sources], "cuts": [c for _, c in sources],
            "types": list(types), **bounds})]
    kinds = {f"t{j}": name for j, name in enumerate(types)}
    if db.backend == "mysql" and len(sources) >= limit:  # fewer can have no floor
        newest = sorted(_newest(db, conn, sources, kinds, bounds), reverse=True)
        if len(newest) >= limit:
            return _above_the_floor(db, conn, newest, kinds, limit, bounds)
        held = {actor for _, actor, _ in newest}  # too few for a floor: those, as below
        sources = [(actor, cut) for actor, cut in sources if actor in held]
    found: list[StoredEvent] = []
    for start in range(0, len(sources), GROUP):
        group = sources[start:start + GROUP]
        params: dict[str, Any] = {**bounds, **kinds}
        for i, (actor, cut) in enumerate(group):
            params[f"a{i}"] = actor
            params[f"c{i}"] = cut
        shape = (len(group), len(types), below is not None, above is not None, limit)
        statement = union(*shape, wrapped=db.backend == "sqlite")
        found += [stored_event(r) for r in db.fetch(conn, statement, params)]
    if len(sources) > GROUP:
        found.sort(key=lambda ev: ev.id, reverse=True)
    return found[:limit]


# MariaDB: the index each statement reads, named (its estimates may take another)
ACTOR_TYPE_INDEX = "ix_events_actor_type_retracted_at"


def _in_list(prefix: str, n: int) -> str:
    return ", ".join(f":{prefix}{i}" for i in range(n))


def _bounds(below: bool, above: bool) -> str:
    return (" AND id < :below" if below else "") + (" AND id > :above" if above else "")


@lru_cache(maxsize=256)
def newest_by_actor(actors: int, types: int, below: bool, above: bool) -> TextClause:
    """MariaDB: the newest id in range of each of ``actors`` followees (``:a0``…) sharing one
    cut (``:cut``), as (actor, id); a followee with nothing in range has no row."""
    return text(
        f"SELECT actor, MAX(id) FROM events FORCE INDEX ({ACTOR_TYPE_INDEX})"
        f" WHERE actor IN ({_in_list('a', actors)}) AND type IN ({_in_list('t', types)})"
        f" AND retracted_at IS NULL AND id <= :cut{_bounds(below, above)} GROUP BY actor")


@lru_cache(maxsize=256)
def page_from(actors: int, types: int, below: bool, above: bool, limit: int) -> TextClause:
    """MariaDB: the newest ``limit`` events of ``actors`` followees sharing one cut, at or
    above ``:floor``: their ids from the index alone, then the page's rows."""
    names = ", ".join(f"e.{c.name}" for c in COLUMNS)
    return text(
        f"SELECT {names} FROM (SELECT id FROM events FORCE INDEX ({ACTOR_TYPE_INDEX})"
        f" WHERE actor IN ({_in_list('a', actors)}) AND type IN ({_in_list('t', types)})"
        f" AND retracted_at IS NULL AND id <= :cut AND id >= :floor{_bounds(below, above)}"
        f" ORDER BY id DESC LIMIT {int(limit)}) AS page JOIN events e ON e.id = page.id"
        " ORDER BY e.id DESC")


def _by_cut(sources: Sequence[tuple[str, int]]) -> list[tuple[int, list[str]]]:
    """The followees grouped by their cut, each group in parts of :data:`GROUP`."""
    groups: dict[int, list[str]] = {}
    for actor, cut in sources:
        groups.setdefault(cut, []).append(actor)
    return [(cut, actors[start:start + GROUP]) for cut, actors in sorted(groups.items())
            for start in range(0, len(actors), GROUP)]


def _params(actors: Sequence[str], cut: int, kinds: dict[str, str],
            bounds: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {**bounds, **kinds, "cut": cut}
    params.update((f"a{i}", actor) for i, actor in enumerate(actors))
    return params


def _newest(db: Database, conn: Connection, sources: Sequence[tuple[str, int]],
            kinds: dict[str, str], bounds: dict[str, Any]) -> list[tuple[int, str, int]]:
    """(newest id in range, followee, its cut) of each followee holding anything in range."""
    found: list[tuple[int, str, int]] = []
    below, above = "below" in bounds, "above" in bounds
    for cut, actors in _by_cut(sources):
        statement = newest_by_actor(len(actors), len(kinds), below, above)
        found += [(int(id_), actor, cut)
                  for actor, id_ in db.fetch(conn, statement, _params(actors, cut, kinds, bounds))]
    return found


def _above_the_floor(db: Database, conn: Connection, newest: Sequence[tuple[int, str, int]],
                     kinds: dict[str, str], limit: int, bounds: dict[str, Any]
                     ) -> list[StoredEvent]:
    """MariaDB's page (see the module's text) from ``newest``, at least ``limit`` followees'
    newest ids, highest first."""
    floor = newest[limit - 1][0]
    reaching = [(actor, cut) for id_, actor, cut in newest if id_ >= floor]
    below, above = "below" in bounds, "above" in bounds
    found: list[StoredEvent] = []
    for cut, actors in _by_cut(reaching):
        params = {**_params(actors, cut, kinds, bounds), "floor": floor}
        statement = page_from(len(actors), len(kinds), below, above, limit)
        found += [stored_event(r) for r in db.fetch(conn, statement, params)]
    found.sort(key=lambda ev: ev.id, reverse=True)
    return found[:limit]
