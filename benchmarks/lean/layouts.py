"""The candidate lean layouts' DDL for PostgreSQL, SQLite and MariaDB, and their rows built from
the data set (dataset.py), so each holds the same notifications.

Common to all: a dictionary of names (users, types, objects: integer ids, kept in memory by
the worker), events stored once (``ev``) and narrow read watermarks (``marks``).

* ``a`` -- the integer row (issue 40's "lean raw"): one row per (user, event), every column
  an integer, three indexes (primary key, the base rows' page order, the display group).
* ``b`` -- a row per display group (the newest member, the summary, the read state) and a
  narrow row per older member of a bundle; a singleton is its group row alone. Per
  (user, bundle) the open group (``b_open``), per event chunk the packed recipients
  (``deliveries``: idempotency and retraction). One index per table: the primary key.
* ``c`` -- as ``b``, the older members packed into their group row (LEB128 deltas of event
  ids, newest first); no member table.
* ``d`` -- as ``c``, the group row keyed by (user, created_at) alone: a user's times are made
  unique at delivery (a collision moves the newer one a microsecond on, as a join already does).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import pairwise
from typing import Any

from dataset import Ev, Note

TYPES = {"pg": {"I2": "smallint", "I4": "integer", "I8": "bigint", "BLOB": "bytea",
                "TXT": "text", "END": "", "NAME": "text"},
         "sqlite": {"I2": "INTEGER", "I4": "INTEGER", "I8": "INTEGER", "BLOB": "BLOB",
                    "TXT": "TEXT", "END": " WITHOUT ROWID", "NAME": "TEXT"},
         "maria": {"I2": "SMALLINT", "I4": "INT", "I8": "BIGINT", "BLOB": "VARBINARY(3000)",
                   "TXT": "TEXT", "END": " ENGINE=InnoDB", "NAME": "VARCHAR(255)"}}

COMMON = """
CREATE TABLE names (id {I4} NOT NULL, kind {I2} NOT NULL, name {NAME} NOT NULL,
  PRIMARY KEY (id)){END};
CREATE UNIQUE INDEX names_kind_name ON names (kind, name);
CREATE TABLE ev (id {I8} NOT NULL, created_at {I8} NOT NULL, type_id {I2} NOT NULL,
  actor_id {I4}, object_id {I4}, retracted_at {I8}, payload {TXT} NOT NULL,
  holders {BLOB}, PRIMARY KEY (id)){END};
CREATE INDEX ev_object ON ev (object_id, type_id);
CREATE TABLE marks (user_id {I4} NOT NULL, scope {I4} NOT NULL, until_at {I8} NOT NULL,
  position_at {I8}, position_id {I8}, PRIMARY KEY (user_id, scope)){END};
"""

GROUPS_OPEN_DELIVERIES = """
CREATE TABLE {p}_open (user_id {I4} NOT NULL, bundle_key {I8} NOT NULL,
  created_at {I8} NOT NULL, event_id {I8} NOT NULL, PRIMARY KEY (user_id, bundle_key)){END};
CREATE TABLE {p}_deliveries (event_id {I8} NOT NULL, chunk {I4} NOT NULL,
  users {BLOB} NOT NULL, PRIMARY KEY (event_id, chunk)){END};
"""

DDL = {
    "a": """
CREATE TABLE a_notifications (user_id {I4} NOT NULL, flags {I2} NOT NULL,
  event_id {I8} NOT NULL, created_at {I8} NOT NULL, fresh_at {I8} NOT NULL,
  display_id {I8} NOT NULL, bundle_key {I8} NOT NULL, read_at {I8},
  PRIMARY KEY (user_id, event_id)){END};
CREATE INDEX a_page ON a_notifications (user_id, {BASE}created_at, event_id){WHERE_BASE};
CREATE INDEX a_group ON a_notifications (user_id, display_id);
""",
    "b": """
CREATE TABLE b_groups (user_id {I4} NOT NULL, flags {I2} NOT NULL, members {I2} NOT NULL,
  created_at {I8} NOT NULL, event_id {I8} NOT NULL, first_id {I8}, fresh_at {I8},
  actors {BLOB}, PRIMARY KEY (user_id, created_at, event_id)){END};
CREATE TABLE b_members (user_id {I4} NOT NULL, first_id {I8} NOT NULL,
  event_id {I8} NOT NULL, PRIMARY KEY (user_id, first_id, event_id)){END};
""" + GROUPS_OPEN_DELIVERIES.replace("{p}", "b"),
    "c": """
CREATE TABLE c_groups (user_id {I4} NOT NULL, type_id {I2} NOT NULL, flags {I2} NOT NULL,
  created_at {I8} NOT NULL, event_id {I8} NOT NULL, first_id {I8}, fresh_at {I8},
  packed {BLOB}, PRIMARY KEY (user_id, created_at, event_id)){END};
""" + GROUPS_OPEN_DELIVERIES.replace("{p}", "c"),
    # d: the first chunk's recipients packed in the event's row (ev.holders), so a small
    # audience costs no row of its own; d_deliveries holds the later chunks (none here)
    "d": """
CREATE TABLE d_groups (user_id {I4} NOT NULL, type_id {I2} NOT NULL, flags {I2} NOT NULL,
  created_at {I8} NOT NULL, event_id {I8} NOT NULL, first_id {I8}, fresh_at {I8},
  packed {BLOB}, PRIMARY KEY (user_id, created_at)){END};
""" + GROUPS_OPEN_DELIVERIES.replace("{p}", "d"),
}

# flags bits (a smallint): what issue 38 adds fits beside read
READ, BUNDLES, ARCHIVED, SAVED = 1, 2, 4, 8
REASON_SHIFT = 4  # 3 bits: recipient, mention, subscribed, following, group
BASE = 1 << 8  # layout a only: the newest member of its display group


def ddl(layout: str, backend: str) -> list[str]:
    """The statements creating the common tables (``layout`` '') or one layout's."""
    text = COMMON if layout == "" else DDL[layout]
    words = dict(TYPES[backend])
    if backend == "maria":  # no partial index: the flag leads the key
        words.update(BASE="flags, ", WHERE_BASE="")
    else:
        words.update(BASE="", WHERE_BASE=f" WHERE flags >= {BASE}")
    return [s.strip().format(**words) for s in text.split(";") if s.strip()]


def leb128(values: Iterable[int]) -> bytes:
    out = bytearray()
    for v in values:
        while True:
            byte = v & 0x7F
            v >>= 7
            if v:
                out.append(byte | 0x80)
            else:
                out.append(byte)
                break
    return bytes(out)


def unleb128(data: bytes) -> list[int]:
    out, v, shift = [], 0, 0
    for byte in data:
        v |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            out.append(v)
            v, shift = 0, 0
    return out


def key64(text: str) -> int:
    """A 64-bit signed hash (a bundle key)."""
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big", signed=True)


def pack_group(newest: int, older: list[int], actors: list[int]) -> bytes:
    """A bundle's packed column, LEB128 integers: its member count, the count of distinct
    actors kept, their ids (newest first, at most 100), then the older members' event ids as
    deltas (newest first; at most ACTOR_SCAN - 1 of them)."""
    deltas, prev = [], newest
    for m in older:
        deltas.append(prev - m)
        prev = m
    return leb128([len(older) + 1, len(actors), *actors, *deltas])


class Rows:
    """The rows of every layout for a data set."""

    def __init__(self, evs: list[Ev], notes: list[Note]) -> None:
        self.names: dict[tuple[int, str], int] = {}
        self.evs = evs
        self.notes = notes
        self.by_id = {e.id: e for e in evs}

    def name(self, kind: int, name: str) -> int:
        return self.names.setdefault((kind, name), len(self.names) + 1)

    def user_id(self, u: int) -> int:
        return self.name(0, f"user{u:05d}")

    def holders(self) -> dict[int, bytes]:
        """Each event's recipients: sorted user ids as LEB128 deltas."""
        delivered: dict[int, list[int]] = defaultdict(list)
        for n in self.notes:
            delivered[n.event].append(self.user_id(n.user))
        out = {}
        for event, users in delivered.items():
            users.sort()
            out[event] = leb128([users[0]] + [b - a for a, b in pairwise(users)])
        return out

    def common(self) -> dict[str, list[tuple[Any, ...]]]:
        """The common tables; ev.holders filled (layout d's: the others keep d_deliveries)."""
        holders = self.holders()
        ev = [(e.id, e.created_at, self.name(1, e.type), self.name(0, e.actor),
               self.name(2, e.object), None, json.dumps(e.payload, separators=(",", ":")),
               holders.get(e.id)) for e in self.evs]
        for n in self.notes:
            self.user_id(n.user)
        names = [(i, kind, name) for (kind, name), i in self.names.items()]
        return {"names": names, "ev": ev, "marks": []}

    def groups(self) -> Iterator[tuple[int, int, list[Note]]]:
        """(user id, group first event id, its members newest first)."""
        found: dict[tuple[int, int], list[Note]] = defaultdict(list)
        for n in self.notes:
            found[(self.user_id(n.user), n.group)].append(n)
        for (u, g), members in found.items():
            yield u, g, sorted(members, key=lambda m: (m.created_at, m.event), reverse=True)

    def flags(self, n: Note) -> int:
        reason = 1 if n.bundle else 2
        return (BUNDLES if n.bundle else 0) | reason << REASON_SHIFT

    def layout_a(self) -> dict[str, list[tuple[Any, ...]]]:
        rows = []
        for u, g, members in self.groups():
            for i, n in enumerate(members):
                bundle = key64(n.bundle or f"event\x00{n.event}")
                rows.append((u, self.flags(n) | (BASE if i == 0 else 0), n.event, n.created_at,
                             n.created_at, g, bundle, None))
        return {"a_notifications": rows}

    def grouped(self, p: str, packed: bool) -> dict[str, list[tuple[Any, ...]]]:
        groups, members_rows, opened = [], [], {}
        for u, g, members in self.groups():
            newest = members[0]
            older = [m.event for m in members[1:]]
            actors = list(dict.fromkeys(self.name(0, self.by_id[m.event].actor)
                                        for m in members))[:100]
            summary = None
            if len(members) > 1:
                summary = pack_group(newest.event, older, actors) if packed else leb128(actors)
            # c, d: (user, type, flags, ...); b: (user, flags, members, ...)
            second, third = ((self.name(1, self.by_id[newest.event].type), self.flags(newest))
                             if packed else (self.flags(newest), len(members)))
            groups.append((u, second, third, newest.created_at,
                           newest.event, g if len(members) > 1 else None, None, summary))
            if not packed:
                members_rows += [(u, g, m) for m in older]
            if newest.bundle:
                key = (u, key64(newest.bundle))
                if key not in opened or opened[key][0] < newest.created_at:
                    opened[key] = (newest.created_at, newest.event)
        deliveries = ([] if p == "d" else
                      [(event, 0, users) for event, users in self.holders().items()])
        out = {f"{p}_groups": groups,
               f"{p}_open": [(u, k, c, e) for (u, k), (c, e) in opened.items()],
               f"{p}_deliveries": deliveries}
        if not packed:
            out[f"{p}_members"] = members_rows
        return out

    def layout(self, name: str) -> dict[str, list[tuple[Any, ...]]]:
        if name == "a":
            return self.layout_a()
        return self.grouped(name, packed=name != "b")
