"""The "lean raw" side of W2 and W3: issue 40's lean layout ("D" of the lean design) written and
read by raw statements, in tables of its own (``lean_*``) beside tidings' in the bench store.

The layout, in short: a dictionary of names (``lean_names``: users, types and objects as integer
ids, kept in memory by the client), each event once (``lean_ev``, with the first chunk of its
recipients packed in ``holders``), one row per display group (``lean_inbox``, keyed by (user,
created_at), a user's times made unique; a bundle's older members and its distinct actors
packed as LEB128 integers in ``packed``), the open group of each (user, bundle)
(``lean_inbox_open``), the recipients of later chunks (``lean_deliveries``) and narrow read
watermarks (``lean_marks``). Every table has its primary key only, but the dictionary's
(kind, name) and the events' (object, type) indexes.

W2 fills it from tidings' own rows once the data set is delivered (the same users, the same
notifications in the same display groups, the same read state); W3 from tidings' ``follows``.
The statements are those of the design's table "reads and writes, statement by statement":

* unread count — the user's group rows newer than the "all" watermark and not read, newest
  first, ``LIMIT 100``, counted;
* first page — the 20 newest group rows joined to their events, the watermark as a column; each
  summary ("and N others") decoded from ``packed``, its actors named from memory;
* mark all read — one upsert of the user's "all" watermark, moved forward only;
* fan-out — the event row with its holders and the followers' group rows, one transaction
  (on PostgreSQL one statement: the holders there are 4 bytes a user, ``int4send``, standing in
  for the client's LEB128 deltas).

Groups marked unread again (the design's sparse ``inbox_reopened``) are not modelled: none
exist in the benches' data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from tidings.domain.bundling import UNREAD_CAP
from tidings.domain.types import EventType
from tidings_benchmarks.raw import RawConnection
from tidings_benchmarks.storage import table_bytes

DESIGN = "lean layout D (issue 40): group rows with packed members, raw statements"
USER, TYPE, OBJECT = 0, 1, 2  # lean_names.kind
READ, BUNDLES = 1, 2  # flags bits
RECIPIENT, FOLLOWING = 1 << 4, 4 << 4  # flags bits 4-6: why the user was told
ACTORS_KEPT = 100
MEMBERS_KEPT = 499
INBOX_TABLES = ("lean_names", "lean_ev", "lean_marks", "lean_inbox", "lean_inbox_open",
                "lean_deliveries")
# by a fan-out, with the column of each that holds the event's id
WRITTEN = (("lean_inbox", "event_id"), ("lean_inbox_open", "event_id"),
           ("lean_deliveries", "event_id"), ("lean_ev", "id"))

_WORDS = {
    "postgresql": {"I2": "smallint", "I4": "integer", "I8": "bigint", "PACKED": "bytea",
                   "BLOB": "bytea", "TXT": "text", "NAME": "text", "END": "", "FIXED": ""},
    "sqlite": {"I2": "INTEGER", "I4": "INTEGER", "I8": "INTEGER", "PACKED": "BLOB",
               "BLOB": "BLOB", "TXT": "TEXT", "NAME": "TEXT", "END": "",
               "FIXED": " WITHOUT ROWID"},
    "mysql": {"I2": "SMALLINT", "I4": "INT", "I8": "BIGINT", "PACKED": "VARBINARY(3000)",
              "BLOB": "BLOB", "TXT": "TEXT", "NAME": "VARCHAR(255)", "END": " ENGINE=InnoDB",
              "FIXED": " ENGINE=InnoDB"},
}
_DDL = """
CREATE TABLE lean_names (id {I4} NOT NULL, kind {I2} NOT NULL, name {NAME} NOT NULL,
  PRIMARY KEY (id)){END};
CREATE UNIQUE INDEX lean_names_kind_name ON lean_names (kind, name);
CREATE TABLE lean_ev (id {I8} NOT NULL, created_at {I8} NOT NULL, type_id {I2} NOT NULL,
  actor_id {I4}, object_id {I4}, retracted_at {I8}, payload {TXT} NOT NULL, holders {BLOB},
  PRIMARY KEY (id)){END};
CREATE INDEX lean_ev_object ON lean_ev (object_id, type_id);
CREATE TABLE lean_marks (user_id {I4} NOT NULL, scope {I4} NOT NULL, until_at {I8} NOT NULL,
  position_at {I8}, position_id {I8}, PRIMARY KEY (user_id, scope)){FIXED};
CREATE TABLE lean_inbox (user_id {I4} NOT NULL, type_id {I2} NOT NULL, flags {I2} NOT NULL,
  created_at {I8} NOT NULL, event_id {I8} NOT NULL, first_id {I8}, fresh_at {I8},
  packed {PACKED}, PRIMARY KEY (user_id, created_at)){FIXED};
CREATE TABLE lean_inbox_open (user_id {I4} NOT NULL, bundle_key {I8} NOT NULL,
  created_at {I8} NOT NULL, event_id {I8} NOT NULL, PRIMARY KEY (user_id, bundle_key)){FIXED};
CREATE TABLE lean_deliveries (event_id {I8} NOT NULL, chunk {I4} NOT NULL, users {BLOB} NOT NULL,
  PRIMARY KEY (event_id, chunk)){FIXED};
CREATE TABLE lean_follows (followee {I4} NOT NULL, follower {I4} NOT NULL,
  PRIMARY KEY (followee, follower)){FIXED}
"""

UNREAD_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM lean_inbox WHERE user_id = %s AND created_at > "
    "COALESCE((SELECT until_at FROM lean_marks WHERE user_id = %s AND scope = 0), 0) "
    f"AND flags & 1 = 0 ORDER BY created_at DESC LIMIT {UNREAD_CAP}) AS capped")
PAGE_SQL = (
    "SELECT g.created_at, g.event_id, g.type_id, g.flags, g.first_id, g.fresh_at, g.packed, "
    "e.actor_id, e.object_id, e.payload, (SELECT until_at FROM lean_marks "
    "WHERE user_id = %s AND scope = 0) FROM lean_inbox g JOIN lean_ev e ON e.id = g.event_id "
    "WHERE g.user_id = %s ORDER BY g.created_at DESC LIMIT 20")
_MARK = "INSERT INTO lean_marks (user_id, scope, until_at) VALUES (%s, 0, %s) "
MARK_SQL = {
    "postgresql": _MARK + "ON CONFLICT (user_id, scope) DO UPDATE SET until_at = "
                          "GREATEST(lean_marks.until_at, EXCLUDED.until_at)",
    "sqlite": _MARK + "ON CONFLICT (user_id, scope) DO UPDATE SET until_at = "
                      "MAX(until_at, excluded.until_at)",
    "mysql": _MARK + "ON DUPLICATE KEY UPDATE until_at = GREATEST(until_at, VALUES(until_at))",
}
FOLLOWERS_SQL = "SELECT follower FROM lean_follows WHERE followee = %s ORDER BY follower"
EVENT_SQL = ("INSERT INTO lean_ev (id, created_at, type_id, actor_id, object_id, payload, "
             "holders) VALUES (%s, %s, %s, %s, %s, '{}', %s)")
ROWS_SQL = ("INSERT INTO lean_inbox (user_id, type_id, flags, created_at, event_id) "
            "SELECT follower, %s, %s, %s, %s FROM lean_follows WHERE followee = %s")
PUSH_PG_SQL = (
    "WITH h AS (SELECT coalesce(string_agg(int4send(follower), ''::bytea ORDER BY follower), "
    "''::bytea) AS users FROM lean_follows WHERE followee = %s), "
    "m AS (INSERT INTO lean_ev (id, created_at, type_id, actor_id, object_id, payload, holders) "
    "SELECT %s, %s, %s, %s, %s, '{}', h.users FROM h) " + ROWS_SQL)
STATEMENTS = {
    "unread count": UNREAD_SQL,
    "first page (20, bundled)": PAGE_SQL + " (summaries decoded from packed, names from memory)",
    "mark all read": MARK_SQL["postgresql"],
    "fan-out": f"{FOLLOWERS_SQL}; {EVENT_SQL}; {ROWS_SQL}; a lean_deliveries row per later "
               "chunk; COMMIT",
    "push": f"{PUSH_PG_SQL}; COMMIT (SQLite, MariaDB: {FOLLOWERS_SQL}; {EVENT_SQL}; "
            f"{ROWS_SQL}; COMMIT)",
}


def create_tables(raw: RawConnection) -> None:
    """Make the lean tables that do not exist yet."""
    words = _WORDS[raw.backend]
    for statement in _DDL.split(";"):
        for kind in ("TABLE", "INDEX"):
            statement = statement.replace(f"{kind} lean_", f"{kind} IF NOT EXISTS lean_")
        raw.execute(statement.strip().format(**words))
    raw.commit()


def leb128(values: Iterable[int]) -> bytes:
    """Unsigned integers as LEB128 bytes."""
    out = bytearray()
    for v in values:
        while v > 0x7F:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def unleb128(data: bytes) -> list[int]:
    out: list[int] = []
    v = shift = 0
    for byte in data:
        v |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            out.append(v)
            v = shift = 0
    return out


def pack_users(users: Sequence[int]) -> bytes:
    """Sorted user ids as LEB128 deltas (a delivery's record)."""
    return leb128([users[0], *(b - a for a, b in pairwise(users))]) if users else b""


def pack_group(newest: int, older: Sequence[int], actors: Sequence[int]) -> bytes:
    """A bundle's ``packed``: its member count, the count of actors kept, their ids (newest
    first, at most 100), then the older members' event ids as deltas, newest first (at most
    499)."""
    kept = actors[:ACTORS_KEPT]
    deltas, prev = [], newest
    for member in older[:MEMBERS_KEPT]:
        deltas.append(prev - member)
        prev = member
    return leb128([len(older) + 1, len(kept), *kept, *deltas])


def summary(packed: bytes | None) -> tuple[int, list[int]]:
    """(member count, actor ids newest first) of a group row (a singleton: (1, []))."""
    if not packed:
        return 1, []
    values = unleb128(bytes(packed))
    return values[0], values[2:2 + values[1]]


class Names:
    """The dictionary: (kind, name) to integer id, and back."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, str], int] = {}
        self.names: dict[int, str] = {}
        self._new: list[tuple[int, int, str]] = []

    def id(self, kind: int, name: str) -> int:
        found = self.ids.get((kind, name))
        if found is None:
            found = self.ids[(kind, name)] = len(self.ids) + 1
            self.names[found] = name
            self._new.append((found, kind, name))
        return found

    def write(self, raw: RawConnection) -> None:
        """Write the ids made since the last write."""
        raw.write_rows("lean_names", ("id", "kind", "name"), self._new, batch=5000)
        self._new = []


@dataclass(frozen=True)
class Filled:
    """What :func:`fill_inbox` wrote."""

    notifications: int
    groups: int
    events: int


def fill_inbox(raw: RawConnection, names: Names, types: Sequence[EventType]) -> Filled:
    """The lean tables filled from tidings' notifications, events and "all" read markers:
    one group row per (user, display group), its newest member's time and event, read if that
    member is; the open group of each (user, bundle) of a bundling type."""
    bundles = {t.name: t.bundle != "none" for t in types}
    events = raw.fetch("SELECT id, created_at, type, actor, object, payload FROM events "
                       "ORDER BY id")
    rows = raw.fetch(
        "SELECT n.user_id, n.display_hash, n.bundle_hash, n.event_id, n.created_at, "
        "n.fresh_at, e.type, n.read_at, e.actor FROM notifications n "
        "JOIN events e ON e.id = n.event_id "
        "ORDER BY n.user_id, n.display_hash, n.created_at DESC, n.event_id DESC")
    holders: dict[int, list[int]] = {}
    groups: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for row in rows:
        groups.setdefault((row[0], row[1]), []).append(row)
        holders.setdefault(int(row[3]), []).append(names.id(USER, row[0]))
    ev = [(e, at, names.id(TYPE, kind), names.id(USER, actor) if actor else None,
           names.id(OBJECT, obj) if obj else None, payload,
           pack_users(sorted(holders[e])) if e in holders else None)
          for e, at, kind, actor, obj, payload in events]
    by_user: dict[int, list[list[Any]]] = {}
    for (user, _display), members in groups.items():
        newest = members[0]  # the base row
        actors = list(dict.fromkeys(names.id(USER, m[8]) for m in members if m[8]))
        older = [int(m[3]) for m in members[1:]]
        flags = (READ if newest[7] is not None else 0) | (
            BUNDLES if bundles.get(newest[6]) else 0) | RECIPIENT
        fresh = None if newest[5] == newest[4] else newest[5]
        by_user.setdefault(names.id(USER, user), []).append([
            names.id(USER, user), names.id(TYPE, newest[6]), flags, int(newest[4]),
            int(newest[3]), int(members[-1][3]) if older else None, fresh,
            pack_group(int(newest[3]), older, actors) if older else None, newest[2]])
    inbox: list[tuple[Any, ...]] = []
    opened: dict[tuple[int, int], tuple[int, int]] = {}
    for user_groups in by_user.values():
        user_groups.sort(key=lambda g: (g[3], g[4]))
        last = None
        for g in user_groups:  # a user's times made unique, the order kept
            if last is not None and g[3] <= last:
                g[3] = last + 1
            last = g[3]
            if g[2] & BUNDLES:
                opened[(g[0], int(g[8]))] = (g[3], g[4])  # the stored key; the newest wins
            inbox.append(tuple(g[:8]))
    marks = [(names.id(USER, user), 0, until) for user, until in raw.fetch(
        "SELECT user_id, until_at FROM read_markers WHERE scope = 'all'")]
    names.write(raw)
    raw.write_rows("lean_ev", ("id", "created_at", "type_id", "actor_id", "object_id",
                               "payload", "holders"), ev, batch=5000)
    raw.write_rows("lean_inbox", ("user_id", "type_id", "flags", "created_at", "event_id",
                                  "first_id", "fresh_at", "packed"), inbox, batch=5000)
    raw.write_rows("lean_inbox_open", ("user_id", "bundle_key", "created_at", "event_id"),
                   [(u, k, c, e) for (u, k), (c, e) in opened.items()], batch=5000)
    raw.write_rows("lean_marks", ("user_id", "scope", "until_at"), marks, batch=5000)
    raw.commit()
    return Filled(len(rows), len(inbox), len(ev))


def analyze(url: str) -> None:
    """Refresh the lean tables' statistics as the bench store's ``analyze`` does tidings'
    (on PostgreSQL ``VACUUM ANALYZE``, which also sets the visibility map)."""
    tables = (*INBOX_TABLES, "lean_follows")
    with RawConnection(url, autocommit=True) as raw:
        if raw.backend == "postgresql":
            raw.execute("VACUUM ANALYZE " + ", ".join(tables))
        elif raw.backend == "mysql":
            raw.fetch("ANALYZE TABLE " + ", ".join(f"`{t}`" for t in tables))
        else:
            raw.execute("ANALYZE")


def storage(url: str, notifications: int) -> dict[str, Any]:
    """Bytes of every lean table with its indexes, in all and per notification."""
    sizes = table_bytes(url, INBOX_TABLES)
    total = sum(sizes.values())
    return {"what": DESIGN, "tables": sizes, "bytes": total,
            "bytes_per_row": round(total / notifications, 1) if notifications else None}


class LeanInbox:
    """W2's three operations on the lean tables, on one autocommit connection; the names
    dictionary in memory."""

    def __init__(self, url: str, types: Sequence[EventType]) -> None:
        self.conn = RawConnection(url, autocommit=False)
        self.names = Names()
        create_tables(self.conn)
        self.filled = fill_inbox(self.conn, self.names, types)
        self.conn.close()
        analyze(url)
        self.conn = RawConnection(url, autocommit=True)
        sql = self.conn.sql
        self._unread, self._page = sql(UNREAD_SQL), sql(PAGE_SQL)
        self._mark = sql(MARK_SQL[self.conn.backend])

    def user(self, name: str) -> int:
        return self.names.ids[(USER, name)]

    def unread_count(self, user: str) -> int:
        u = self.user(user)
        return int(self.conn.fetch(self._unread, (u, u))[0][0])

    def first_page(self, user: str) -> list[dict[str, Any]]:
        u = self.user(user)
        names = self.names.names
        page = []
        for at, event, type_id, flags, first, fresh, packed, actor, obj, payload, mark in (
                self.conn.fetch(self._page, (u, u))):
            count, actors = summary(packed)
            page.append({"created_at": at, "event_id": event, "type": names[type_id],
                         "read": bool(flags & READ) or (fresh or at) <= (mark or 0),
                         "group": first or event, "count": count,
                         "actors": [names[a] for a in actors] or (
                             [names[actor]] if actor else []),
                         "object": names[obj] if obj else None, "payload": payload})
        return page

    def mark_all_read(self, user: str, now: int) -> None:
        self.conn.fetch(self._mark, (self.user(user), now))

    def save_marks(self) -> list[tuple[Any, ...]]:
        return self.conn.fetch("SELECT user_id, scope, until_at FROM lean_marks")

    def restore_marks(self, rows: list[tuple[Any, ...]]) -> None:
        self.conn.execute("DELETE FROM lean_marks")
        self.conn.write_rows("lean_marks", ("user_id", "scope", "until_at"), rows)

    def close(self) -> None:
        self.conn.close()


class LeanFanout:
    """W3's fan-outs on the lean tables (emptied first), one transaction an event; the
    followers copied from tidings' ``follows`` by :meth:`load_follows`."""

    def __init__(self, url: str, chunk_size: int) -> None:
        self.url = url
        self.conn = RawConnection(url, autocommit=False)
        self.chunk_size = chunk_size
        self.names = Names()
        create_tables(self.conn)
        for table in (*INBOX_TABLES, "lean_follows"):
            self.conn.execute(f"DELETE FROM {table}")
        self.conn.commit()
        sql = self.conn.sql
        self._followers, self._event = sql(FOLLOWERS_SQL), sql(EVENT_SQL)
        self._rows, self._push = sql(ROWS_SQL), sql(PUSH_PG_SQL)
        self._deliveries = sql("INSERT INTO lean_deliveries (event_id, chunk, users) "
                               "VALUES (%s, %s, %s)")
        self.type_id = self.names.id(TYPE, "bench.post")
        self.object_id = self.names.id(OBJECT, "bench:post")
        self.next_event = 0
        self.kept = 0  # the events up to this id stay (a prefilled history)

    def load_follows(self) -> int:
        """Replace the lean follows by tidings' ``follows``, names made ids; the count."""
        self.conn.execute("DELETE FROM lean_follows")
        pairs = [(self.names.id(USER, b), self.names.id(USER, a)) for a, b in
                 self.conn.fetch("SELECT follower, followee FROM follows")]
        self.names.write(self.conn)
        written = self.conn.write_rows("lean_follows", ("followee", "follower"), pairs,
                                       batch=5000)
        self.conn.commit()
        analyze(self.url)
        return written

    def empty(self) -> None:
        """Delete what fan-outs wrote since :meth:`keep` (the follows and names stay)."""
        for table, column in WRITTEN:
            self.conn.execute(self.conn.sql(f"DELETE FROM {table} WHERE {column} > %s"),
                              (self.kept,))
        self.conn.commit()

    def keep(self) -> None:
        """Keep the events delivered so far through every :meth:`empty`."""
        self.kept = self.next_event

    def forget(self) -> None:
        """Delete every event delivered, those kept too."""
        self.kept = 0
        self.empty()

    def deliver(self, actor: str, now: int) -> int:
        """A new event of ``actor`` in each follower's inbox, committed; the rows written."""
        a = self.names.ids[(USER, actor)]
        self.next_event += 1
        e = self.next_event
        flags = FOLLOWING
        if self.conn.backend == "postgresql":
            written = self.conn.execute(self._push, (a, e, now, self.type_id, a,
                                                     self.object_id, self.type_id, flags, now,
                                                     e, a))
            self.conn.commit()
            return written
        return self._chunked(a, e, now)

    def deliver_chunked(self, actor: str, now: int) -> int:
        """The same for a large audience: the followers read, the first chunk of them packed
        in the event's row and each later chunk in a ``lean_deliveries`` row, the inbox rows
        written by one ``INSERT … SELECT``; committed."""
        a = self.names.ids[(USER, actor)]
        self.next_event += 1
        return self._chunked(a, self.next_event, now)

    def _chunked(self, a: int, e: int, now: int) -> int:
        users = [int(r[0]) for r in self.conn.fetch(self._followers, (a,))]
        size = self.chunk_size
        self.conn.execute(self._event, (e, now, self.type_id, a, self.object_id,
                                        pack_users(users[:size])))
        for chunk, start in enumerate(range(size, len(users), size), 1):
            self.conn.execute(self._deliveries, (e, chunk, pack_users(users[start:start + size])))
        written = self.conn.execute(self._rows, (self.type_id, FOLLOWING, now, e, a))
        self.conn.commit()
        return written

    def close(self) -> None:
        self.conn.close()
