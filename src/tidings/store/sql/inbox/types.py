"""The inbox's types dictionary on SQL (``inbox_types``): a notification row names its event
type by a small integer; the type's category and section are the dictionary row's.

Fan-out finds the ids of the types it delivers through a cache per :class:`Database` (type
name → id, category, section), filled with the rows it read and, for the rows a unit added
or changed, once that unit has committed (a unit rolled back leaves no row, so the cache
never names an id the table lacks). A miss reads the table; a type not in it is added in the
delivering unit, concurrency-safe: an insert that skips an existing name (PostgreSQL's ``ON
CONFLICT DO NOTHING``, SQLite's ``OR IGNORE``, MariaDB's ``INSERT IGNORE``; a second unit
adding the same name waits for the first, under READ COMMITTED) and then a read of the row by
its name, so two workers adding one new type both end with its one id. Names are added in
their order, so two units adding several never wait on each other in a circle.

A type delivered with another category or section than its row holds (a type declared again,
changed) updates the row: the type's stored notifications then read as the new ones, as
Echo's do (it maps a notification's category and section from its type when it reads it).

Reads do not use the cache: they join the table for the names (its primary key, a few rows)
and filter through it (``type_id IN (SELECT id FROM inbox_types WHERE …)``), so every process
reads a changed category at once, in the statement it already runs.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import ColumnElement, Connection, bindparam, select, update

from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import inbox_types, notifications

t = inbox_types.c
n = notifications.c

Definition = tuple[int, str, str]  # a type's id, category and section


class TypeCache:
    """The dictionary rows one :class:`Database` has seen committed, by type name."""

    def __init__(self) -> None:
        self.known: dict[str, Definition] = {}
        self.lock = threading.Lock()

    def learn(self, rows: dict[str, Definition]) -> None:
        with self.lock:
            self.known.update(rows)


_CACHES: weakref.WeakKeyDictionary[Database, TypeCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_of(db: Database) -> TypeCache:
    """The cache of ``db``'s dictionary (made on first use)."""
    cache = _CACHES.get(db)
    if cache is None:
        with _CACHES_LOCK:
            cache = _CACHES.setdefault(db, TypeCache())
    return cache


class TypeIds:
    """The type ids one unit of work writes: the cache, and what this unit added or changed
    (handed to the cache by ``after_commit`` when there is one, else never)."""

    def __init__(self, db: Database, conn: Connection,
                 after_commit: Callable[[Callable[[], None]], None] | None) -> None:
        self.db = db
        self.conn = conn
        self.cache = cache_of(db)
        self.after_commit = after_commit
        self.written: dict[str, Definition] = {}  # by this unit, not committed yet

    def ids(self, types: Iterable[tuple[str, str, str]]) -> dict[str, int]:
        """The id of each (name, category, section)'s type, its row added or brought up to
        date where needed."""
        found: dict[str, int] = {}
        missing: list[tuple[str, str, str]] = []
        for name, category, section in sorted(set(types)):
            known = self.written.get(name) or self.cache.known.get(name)
            if known is not None and known[1:] == (category, section):
                found[name] = known[0]
            else:
                missing.append((name, category, section))
        if missing:
            found.update(self._resolve(missing))
        return found

    def _resolve(self, missing: list[tuple[str, str, str]]) -> dict[str, int]:
        stored = self._read([name for name, _, _ in missing])
        seen: dict[str, Definition] = {}
        written: dict[str, Definition] = {}
        for name, category, section in missing:  # in name order
            row = stored.get(name)
            if row is None:
                self.conn.execute(self.db.insert_ignore(inbox_types).values(
                    name=name, category=category, section=section))
                row = self._read([name])[name]  # ours, or a concurrent unit's (committed)
                written[name] = row
            if row[1:] != (category, section):
                self.conn.execute(update(inbox_types).where(t.id == row[0])
                                  .values(category=category, section=section))
                row = (row[0], category, section)
                written[name] = row
            elif name not in written:
                seen[name] = row
        self.cache.learn(seen)  # rows read as committed (this unit wrote none of them)
        if written:
            self.written.update(written)
            if self.after_commit is not None:
                self.after_commit(lambda: self.cache.learn(written))
        return {name: row[0] for name, row in {**seen, **written}.items()}

    def _read(self, names: list[str]) -> dict[str, Definition]:
        return {r.name: (r.id, r.category, r.section) for r in self.conn.execute(
            select(t.id, t.name, t.category, t.section).where(t.name.in_(names)))}


def named(names: Iterable[str]) -> ColumnElement[bool]:
    """Rows of these types (ids from the dictionary; a name not in it matches nothing)."""
    return n.type_id.in_(select(t.id).where(t.name.in_(list(names))))


def of(kind: str, value: Any) -> ColumnElement[bool]:
    """Rows whose type's ``kind`` (type, category or section) is ``value`` (a value or a
    bound parameter)."""
    column = t.name if kind == "type" else t[kind]
    return n.type_id.in_(select(t.id).where(column == value))


def named_param(name: str) -> ColumnElement[bool]:
    """Rows of the types of the expanding bound parameter ``name`` (a list of names)."""
    return n.type_id.in_(select(t.id).where(t.name.in_(bindparam(name, expanding=True))))


# a notification's type, category and section by their names in InboxRow and ReadState: of
# the dictionary joined (:func:`joined`), or each by a subquery of the row's type id
NAMES = (t.name.label("type"), t.category, t.section)
NAMES_OF_ROW = tuple(select(column).where(t.id == n.type_id).scalar_subquery().label(label)
                     for column, label in zip(NAMES, ("type", "category", "section"),
                                              strict=True))


def joined(table: Any) -> Any:
    """``table`` (notifications, or a join of it) joined to its rows' types."""
    return table.join(inbox_types, t.id == n.type_id)
