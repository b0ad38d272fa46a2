"""W2's baseline: the minimal statements that answer an unread count, a first page and a mark
all read, from ``../shared/bench-anchors/raw_postgresql.py``, on tidings' own tables.

* unread count — the anchor's capped count (``LIMIT 100``): unread base rows of one user, with
  the user's "all" watermark read in the same statement (a subquery);
* first page — the anchor's "20 newest via inbox join": the user's 20 newest base rows in index
  (keyset) order, joined to their events for the payload; no titles are rendered;
* mark all read — one upsert of the user's "all" watermark, moved forward only (the one narrow
  row a watermark needs, the Gazelle design the anchors point to).

Each is one statement, one round trip, autocommit. The same SQL serves the HTTP baseline
(:mod:`tidings_benchmarks.baseline_app`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tidings.domain.bundling import UNREAD_CAP
from tidings_benchmarks.raw import RawConnection

ANCHOR = "bench-anchors/raw_postgresql.py"

UNREAD_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM notifications WHERE user_id = %s "
    "AND bundle_base = TRUE AND read_at IS NULL AND fresh_at > COALESCE("
    "(SELECT until_at FROM read_markers WHERE user_id = %s AND scope = 'all'), 0) "
    f"LIMIT {UNREAD_CAP}) AS capped"
)

PAGE_COLUMNS = ("event_id", "created_at", "fresh_at", "type", "category", "section", "actor",
                "object", "bundle_hash", "display_hash", "read_at", "payload")
PAGE_SQL = (  # a row's type, category and section from the types dictionary
    "SELECT n.event_id, n.created_at, n.fresh_at, t.name, t.category, t.section, n.actor, "
    "n.object, n.bundle_hash, n.display_hash, n.read_at, e.payload "
    "FROM notifications n JOIN events e ON e.id = n.event_id "
    "JOIN inbox_types t ON t.id = n.type_id "
    "WHERE n.user_id = %s AND n.bundle_base = TRUE "
    "ORDER BY n.created_at DESC, n.event_id DESC LIMIT 20"
)

_MARK_INSERT = "INSERT INTO read_markers (user_id, scope, until_at) VALUES (%s, 'all', %s) "
MARK_SQL = {
    "postgresql": _MARK_INSERT + "ON CONFLICT (user_id, scope) DO UPDATE SET until_at = "
                                 "GREATEST(read_markers.until_at, EXCLUDED.until_at)",
    "sqlite": _MARK_INSERT + "ON CONFLICT (user_id, scope) DO UPDATE SET until_at = "
                             "MAX(until_at, excluded.until_at)",
    "mysql": _MARK_INSERT + "ON DUPLICATE KEY UPDATE until_at = "
                            "GREATEST(until_at, VALUES(until_at))",
}


@dataclass(frozen=True)
class Baseline:
    """What a baseline figure ran, for the table's readers and the JSON."""

    statement: str
    anchor: str


def baselines(backend: str) -> dict[str, Baseline]:
    """What each W2 figure's baseline runs on ``backend``, by figure."""
    return {
        "unread count": Baseline(UNREAD_SQL, f"{ANCHOR}: unread capped (LIMIT 100)"),
        "first page (20, bundled)": Baseline(
            PAGE_SQL, f"{ANCHOR}: push read 20 newest via inbox join (prepared)"),
        "mark all read": Baseline(MARK_SQL[backend], "one-row watermark upsert (Gazelle's "
                                                     "witness row), autocommit"),
    }


class RawInbox:
    """The three W2 operations on one autocommit driver connection."""

    def __init__(self, url: str) -> None:
        self.conn = RawConnection(url, autocommit=True)
        sql = self.conn.sql
        self._unread = sql(UNREAD_SQL)
        self._page = sql(PAGE_SQL)
        self._mark = sql(MARK_SQL[self.conn.backend])

    def unread_count(self, user: str) -> int:
        return int(self.conn.fetch(self._unread, (user, user))[0][0])

    def first_page(self, user: str) -> list[tuple[object, ...]]:
        return self.conn.fetch(self._page, (user,))

    def mark_all_read(self, user: str, now: int) -> None:
        self.conn.fetch(self._mark, (user, now))

    def operation(self, figure: str) -> Callable[[str, int], object]:
        """The call that times ``figure`` for one user (``now`` is used by writes only)."""
        if figure == "unread count":
            return lambda user, _now: self.unread_count(user)
        if figure == "first page (20, bundled)":
            return lambda user, _now: self.first_page(user)
        return self.mark_all_read

    def close(self) -> None:
        self.conn.close()
