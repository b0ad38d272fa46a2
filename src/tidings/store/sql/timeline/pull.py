"""The pull model's read on SQL: the newest events of each followee, merged in the database.

PostgreSQL runs one statement: the followees (three array parameters, ``unnest``) joined
``LATERAL`` to their newest ``limit`` events through the (actor, created_at, id) index.
SQLite and MariaDB (no LATERAL) run a ``UNION ALL`` of one ``ORDER BY created_at DESC, id
DESC LIMIT n`` subquery of positions per followee, :data:`GROUP` followees a statement, and
join only the page's ids to ``events``: the merge sorts positions, not whole rows. On SQLite
each subquery reads the index on (actor, type, retracted_at, created_at) alone, its entries
carrying the id: no row of ``events`` is read but the page's (migrations 0018,
0027).

MariaDB spends more in planning each of those subqueries than in running it (about 60 µs a
followee: 43 followees, 3.3 ms a read, where the seed's own pull took 1.5). It reads instead
the time of each followee's newest event in one statement (``GROUP BY actor`` over the index
on (actor, type, retracted_at, created_at), which it reads by skipping from followee to
followee; bounded on the time alone, before the upper bounds' own times, so each is the time
of an event in range); the ``limit``-th latest of those times is a floor under the page,
since that many followees hold an event at or after it; a second statement then takes the
newest events at or after the floor of the followees (one range of the same index each, no
subquery a followee; all of them, as one may hold events at an upper bound's own time) and
joins only the page's to ``events``. With fewer followees holding anything than a page holds
there is no floor: the ``UNION ALL`` above, for all the followees (at once, without the first
statement, when there are fewer followees than that).

Every statement reads and merges in the timeline's order, (created_at, id) newest first: the
indexes' order within each followee, so only the merge of the followees' parts sorts.

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
    tuple_,
)
from sqlalchemy.dialects.postgresql import ARRAY

from tidings.domain.timeline import Position
from tidings.domain.views import StoredEvent
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import events
from tidings.store.sql.timeline.positions import compare, compared, params

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
        where.append(compared("<", e.created_at, e.id, "below", rows=True))
    if above:
        where.append(compared(">", e.created_at, e.id, "above", rows=True))
    return where


@lru_cache(maxsize=64)
def lateral(below: bool, above: bool, limit: int) -> Any:
    """PostgreSQL's statement: ``:actors``, ``:cut_ats`` and ``:cut_ids`` (arrays of the
    followees and the highest position to take of each), ``:types`` (an array),
    ``:below_at`` / ``:below_id`` and ``:above_at`` / ``:above_id``."""
    src = func.unnest(bindparam("actors", type_=ARRAY(String)),
                      bindparam("cut_ats", type_=ARRAY(BigInteger)),
                      bindparam("cut_ids", type_=ARRAY(BigInteger))
                      ).table_valued(column("actor", String), column("cut_at", BigInteger),
                                     column("cut_id", BigInteger)).render_derived(name="src")
    types = e.type == any_(bindparam("types", type_=ARRAY(String)))
    newest = (select(*COLUMNS).where(
        e.actor == src.c.actor,
        tuple_(e.created_at, e.id) <= tuple_(src.c.cut_at, src.c.cut_id),
        *_common(types, below, above))
        .order_by(e.created_at.desc(), e.id.desc()).limit(limit).lateral("newest"))
    return (select(newest).select_from(src.join(newest, true()))
            .order_by(newest.c.created_at.desc(), newest.c.id.desc()).limit(limit))


@lru_cache(maxsize=512)
def union(sources: int, types: int, below: bool, above: bool, limit: int,
          wrapped: bool = False) -> TextClause:
    """The statement for ``sources`` followees without LATERAL: ``:a0``…, ``:ca0``… and
    ``:c0``… (each followee and the highest position to take of it), ``:t0``… (the types),
    the positions ``:below_…`` / ``:above_…``; ``wrapped``: each followee's part as a
    subquery, reading the index ``(actor, type, retracted_at, created_at)`` by name
    (SQLite, whose planner may take the (actor, created_at, id) one and then read every
    row), not in parentheses (MariaDB). Only positions go through the ``UNION ALL`` and its
    sort; the page's ``limit`` rows are then joined to ``events``.
    Merging whole rows, MariaDB kept a derived table with a TEXT column (the payload) on
    disk: a read of 43 followees took 35 to 86 ms against about 5; SQLite merges the parts'
    ids as they come, in order (a read of 43 followees 0.3 ms, against 1.3 to 1.6 ms joining
    every followee's rows before the sort)."""
    kinds = ", ".join(f":t{j}" for j in range(types))
    bounds = _bounds(below, above)
    n = int(limit)
    index = f" INDEXED BY {ACTOR_TYPE_INDEX}" if wrapped else ""
    cut = compare("<=", ("created_at", "id"), (":ca{i}", ":c{i}"), rows=False)
    inner = (f"SELECT created_at, id FROM events{index} WHERE actor = :a{{i}} AND "
             + cut +
             f" AND retracted_at IS NULL AND type IN ({kinds}){bounds}"
             f" ORDER BY created_at DESC, id DESC LIMIT {n}")
    part = f"SELECT created_at, id FROM ({inner}) AS p{{i}}" if wrapped else f"({inner})"
    parts = " UNION ALL ".join(part.format(i=i) for i in range(sources))
    names = ", ".join(f"e.{c.name}" for c in COLUMNS)
    return text(f"""
SELECT {names} FROM (SELECT created_at, id FROM ({parts}) AS newest
                     ORDER BY created_at DESC, id DESC LIMIT {n}) AS page
JOIN events e ON e.id = page.id
ORDER BY e.created_at DESC, e.id DESC""")


def pull_page(db: Database, conn: Connection, sources: Sequence[tuple[str, Position]], *,
              types: Sequence[str], limit: int, below: Position | None,
              above: Position | None) -> list[StoredEvent]:
    """See ``EventStore.pull_page``."""
    if not sources or not types or limit <= 0:
        return []
    bounds: dict[str, Any] = {**params("below", below), **params("above", above)}
    if db.backend == "postgresql":
        return [stored_event(r) for r in db.fetch(conn, lateral(below is not None,
                                                           above is not None, limit), {
            "actors": [a for a, _ in sources], "cut_ats": [c[0] for _, c in sources],
            "cut_ids": [c[1] for _, c in sources], "types": list(types), **bounds})]
    kinds = {f"t{j}": name for j, name in enumerate(types)}
    if db.backend == "mysql" and len(sources) >= limit:  # fewer can have no floor
        newest = sorted(_newest(db, conn, sources, kinds, bounds), reverse=True)
        held = [at for at, _, _ in newest if "above_at" not in bounds
                or at > bounds["above_at"]]  # times of events in range
        if len(held) >= limit:
            return _above_the_floor(db, conn, sources, held[limit - 1], kinds, limit, bounds)
    found: list[StoredEvent] = []
    for start in range(0, len(sources), GROUP):
        group = sources[start:start + GROUP]
        values: dict[str, Any] = {**bounds, **kinds}
        for i, (actor, cut) in enumerate(group):
            values[f"a{i}"] = actor
            values[f"ca{i}"], values[f"c{i}"] = cut
        shape = (len(group), len(types), below is not None, above is not None, limit)
        statement = union(*shape, wrapped=db.backend == "sqlite")
        found += [stored_event(r) for r in db.fetch(conn, statement, values)]
    if len(sources) > GROUP:
        found.sort(key=_position, reverse=True)
    return found[:limit]


def _position(event: StoredEvent) -> Position:
    return (event.created_at, event.id)


# SQLite and MariaDB: the index each statement reads, named (the planners may take another)
ACTOR_TYPE_INDEX = "ix_events_actor_type_retracted_at_created_at"


def _in_list(prefix: str, n: int) -> str:
    return ", ".join(f":{prefix}{i}" for i in range(n))


def _bounds(below: bool, above: bool) -> str:
    """The text of a read's bounds (positions, spelled out: :mod:`.positions`)."""
    cols = ("created_at", "id")
    return ((" AND " + compare("<", cols, (":below_at", ":below_id"), rows=False)
             if below else "")
            + (" AND " + compare(">", cols, (":above_at", ":above_id"), rows=False)
               if above else ""))


_CUT = compare("<=", ("created_at", "id"), (":cut_at", ":cut"), rows=False)


@lru_cache(maxsize=256)
def newest_by_actor(actors: int, types: int, below: bool, above: bool) -> TextClause:
    """MariaDB: the time of the newest event of each of ``actors`` followees (``:a0``…)
    sharing one cut, as (actor, created_at), before the time of the cut and of the upper
    bound (a bound on the id too would keep MariaDB from skipping through the index from one
    followee to the next) and at or after the lower bound's time. A time after the lower
    bound's is one of an event in range; a followee's events at the upper bounds' own times
    are not counted."""
    return text(
        f"SELECT actor, MAX(created_at) FROM events FORCE INDEX ({ACTOR_TYPE_INDEX})"
        f" WHERE actor IN ({_in_list('a', actors)}) AND type IN ({_in_list('t', types)})"
        f" AND retracted_at IS NULL AND created_at < :cut_at"
        + (" AND created_at < :below_at" if below else "")
        + (" AND created_at >= :above_at" if above else "") + " GROUP BY actor")


@lru_cache(maxsize=256)
def page_from(actors: int, types: int, below: bool, above: bool, limit: int) -> TextClause:
    """MariaDB: the newest ``limit`` events of ``actors`` followees sharing one cut, dated at
    or after ``:floor``: their ids from the index alone, then the page's rows."""
    names = ", ".join(f"e.{c.name}" for c in COLUMNS)
    return text(
        f"SELECT {names} FROM (SELECT created_at, id FROM events"
        f" FORCE INDEX ({ACTOR_TYPE_INDEX})"
        f" WHERE actor IN ({_in_list('a', actors)}) AND type IN ({_in_list('t', types)})"
        f" AND retracted_at IS NULL AND {_CUT} AND created_at >= :floor"
        f"{_bounds(below, above)} ORDER BY created_at DESC, id DESC LIMIT {int(limit)})"
        " AS page JOIN events e ON e.id = page.id ORDER BY e.created_at DESC, e.id DESC")


def _by_cut(sources: Sequence[tuple[str, Position]]) -> list[tuple[Position, list[str]]]:
    """The followees grouped by their cut, each group in parts of :data:`GROUP`."""
    groups: dict[Position, list[str]] = {}
    for actor, cut in sources:
        groups.setdefault(cut, []).append(actor)
    return [(cut, actors[start:start + GROUP]) for cut, actors in sorted(groups.items())
            for start in range(0, len(actors), GROUP)]


def _params(actors: Sequence[str], cut: Position, kinds: dict[str, str],
            bounds: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {**bounds, **kinds, "cut_at": cut[0], "cut": cut[1]}
    values.update((f"a{i}", actor) for i, actor in enumerate(actors))
    return values


def _newest(db: Database, conn: Connection, sources: Sequence[tuple[str, Position]],
            kinds: dict[str, str], bounds: dict[str, Any]
            ) -> list[tuple[int, str, Position]]:
    """(time of the newest event in range, followee, its cut) of each followee holding
    anything in range."""
    found: list[tuple[int, str, Position]] = []
    below, above = "below_at" in bounds, "above_at" in bounds
    for cut, actors in _by_cut(sources):
        statement = newest_by_actor(len(actors), len(kinds), below, above)
        found += [(int(id_), actor, cut)
                  for actor, id_ in db.fetch(conn, statement, _params(actors, cut, kinds, bounds))]
    return found


def _above_the_floor(db: Database, conn: Connection, reaching: Sequence[tuple[str, Position]],
                     floor: int, kinds: dict[str, str], limit: int, bounds: dict[str, Any]
                     ) -> list[StoredEvent]:
    """MariaDB's page (see the module's text) of the followees ``reaching`` at or after
    ``floor``, a time at or after which at least ``limit`` of them hold an event in range."""
    below, above = "below_at" in bounds, "above_at" in bounds
    found: list[StoredEvent] = []
    for cut, actors in _by_cut(reaching):
        params = {**_params(actors, cut, kinds, bounds), "floor": floor}
        statement = page_from(len(actors), len(kinds), below, above, limit)
        found += [stored_event(r) for r in db.fetch(conn, statement, params)]
    found.sort(key=_position, reverse=True)
    return found[:limit]
