"""InboxStore in memory: notification rows per user with their bundling columns, watermarks.

The same rows and the same rules as the SQL store: one row per (user, event); the newest
member of each display group is its base row, which every list and count reads; unread is
judged against the user's watermarks by :class:`tidings.domain.readstate.Markers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from tidings.domain.bundling import UNREAD_CAP, summary_of
from tidings.domain.bundling import group_info as info_of
from tidings.domain.flags import SAVED, SNOOZED, beyond_cap, in_state, reason_of
from tidings.domain.readstate import POSITION, Markers
from tidings.domain.views import (
    BundleBase,
    Delivery,
    Filters,
    GroupInfo,
    InboxRow,
    NewNotification,
    NotificationKey,
    PageView,
    ReadState,
)
from tidings.store import pageview, stepwise
from tidings.store.memory.state import Journal, NoteRow, State


def _newest_first(row: NoteRow) -> tuple[int, int]:
    return (-row.created_at, -row.event_id)


def _listed(row: NoteRow, payload: str) -> InboxRow:
    """A stored row as a list reads it, with its event's payload."""
    return InboxRow(event_id=row.event_id, user_id=row.user_id, created_at=row.created_at,
                    fresh_at=row.fresh_at, type=row.type, category=row.category,
                    section=row.section, actor=row.actor, object=row.object,
                    bundle_hash=row.bundle_hash, display_hash=row.display_hash,
                    read_at=row.read_at, payload=payload, flags=row.flags)


def _unread(markers: Markers, row: NoteRow) -> bool:
    return markers.is_unread(row.read_at, row.fresh_at, row.type, row.category, row.section,
                             position=(row.created_at, row.event_id))


class MemoryInbox:
    """The inbox of one unit of work."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    def _rows(self, user: str) -> Iterable[NoteRow]:
        return self._s.notes.get(user, {}).values()

    def _put(self, row: NoteRow) -> None:
        self._j.put_in(self._s.notes, row.user_id, row.event_id, row)

    # -- watermarks ----------------------------------------------------------------------------

    def load_markers(self, user: str) -> Markers:
        return Markers.from_rows(self._s.markers.get(user, {}), self._s.positions.get(user))

    def load_markers_many(self, users: Sequence[str]) -> dict[str, Markers]:
        return {u: self.load_markers(u) for u in dict.fromkeys(users) if self._s.markers.get(u)}

    def set_marker(self, user: str, scope: str, until: int) -> None:
        current = self._s.markers.get(user, {}).get(scope)
        if current is None or current < until:
            self._j.put_in(self._s.markers, user, scope, until)

    def set_position(self, user: str, position: tuple[int, int], until: int) -> bool:
        current = self._s.positions.get(user)
        if current is not None and position < current:
            return False
        self._j.put(self._s.positions, user, position)
        self._j.put_in(self._s.markers, user, POSITION, until)
        return True

    def position_of(self, user: str, event_id: int) -> tuple[int, int] | None:
        row = self._s.notes.get(user, {}).get(event_id)
        return None if row is None else (row.created_at, event_id)

    def keys_of(self, user: str, event_ids: Sequence[int]) -> list[NotificationKey]:
        mine = self._s.notes.get(user, {})
        return [NotificationKey(user, e, mine[e].display_hash, mine[e].bundle_base)
                for e in sorted(set(event_ids)) if e in mine]

    # -- delivery ------------------------------------------------------------------------------

    def bundle_bases(self, users: Sequence[str], bundle_hash: str, *,
                     before: tuple[int, int] | None = None) -> dict[str, BundleBase]:
        # units are serialised by the store's lock: deciders for one bundle never overlap
        bases: dict[str, BundleBase] = {}
        for user in dict.fromkeys(users):
            candidates = [r for r in self._rows(user)
                          if r.bundle_base and r.bundle_hash == bundle_hash
                          and (before is None or (r.created_at, r.event_id) < before)]
            if not candidates:
                continue
            row = min(candidates, key=_newest_first)
            bases[user] = BundleBase(
                user_id=user, event_id=row.event_id, display_hash=row.display_hash,
                created_at=row.created_at, fresh_at=row.fresh_at, read_at=row.read_at,
                type=row.type, category=row.category, section=row.section, flags=row.flags)
        return bases

    def bundle_bases_many(self, pairs: Sequence[tuple[str, str]]
                          ) -> dict[tuple[str, str], BundleBase]:
        return stepwise.bases_by_pair(self.bundle_bases, pairs)

    def delivered(self, event_id: int, users: Sequence[str]) -> set[str]:
        holders = self._s.holders.get(event_id, {})
        return {u for u in users if u in holders}

    def held(self, event_ids: Sequence[int]) -> set[int]:
        return {e for e in event_ids if self._s.holders.get(e)}

    def unreachable(self, users: Sequence[str]) -> set[str]:
        return set()

    def index_unreachable(self, event_id: int) -> bool:
        return False

    def index_later(self, event_id: int) -> None:
        return None

    def index(self, event_id: int, users: Sequence[str]) -> None:
        return None

    def insert(self, rows: Sequence[NewNotification]) -> None:
        for new in rows:
            if new.event_id in self._s.notes.get(new.user_id, {}):
                continue
            self._put(NoteRow(
                user_id=new.user_id, event_id=new.event_id, created_at=new.created_at,
                fresh_at=new.fresh_at, type=new.type, category=new.category,
                section=new.section, actor=new.actor, object=new.object,
                bundle_hash=new.bundle_hash, display_hash=new.display_hash, bundle_base=True,
                read_at=None, fields=new.fields, flags=new.flags))
            self._j.put_in(self._s.holders, new.event_id, new.user_id, None)
            if new.user_id not in self._s.users:  # known from now on (no watermark)
                self._j.put(self._s.users, new.user_id, new.created_at)

    def hold(self, users: Sequence[str]) -> None:
        return None  # one unit at a time: nothing to lock

    def over_cap(self, users: Sequence[str], cap: int) -> list[str]:
        # counted from the rows: exact
        return sorted(u for u in set(users) if len(self._s.notes.get(u, {})) > cap)

    def deliver_many(self, items: Sequence[tuple[Delivery, Sequence[str]]]) -> list[list[str]]:
        return stepwise.deliver_many(self, items)

    def demote(self, groups: Sequence[tuple[str, str]]) -> None:
        for user, group in dict.fromkeys(groups):
            for row in list(self._rows(user)):
                if row.bundle_base and row.display_hash == group:
                    self._put(replace(row, bundle_base=False))

    # -- reads ---------------------------------------------------------------------------------

    def _matches(self, row: NoteRow, filters: Filters, markers: Markers) -> bool:
        if not row.bundle_base:
            return False
        if filters.types and row.type not in filters.types:
            return False
        if filters.category is not None and row.category != filters.category:
            return False
        if filters.section is not None and row.section != filters.section:
            return False
        if filters.actor is not None and row.actor != filters.actor:
            return False
        if filters.object is not None and row.object != filters.object:
            return False
        if filters.max_id is not None and row.event_id >= filters.max_id:
            return False
        if filters.since_id is not None and row.event_id <= filters.since_id:
            return False
        if filters.fields and not set(filters.fields) <= set(row.fields):
            return False
        if not in_state(row.flags, filters.state):
            return False
        if filters.reasons is not None and reason_of(row.flags) not in filters.reasons:
            return False
        return filters.unread is None or _unread(markers, row) == filters.unread

    def page(self, user: str, filters: Filters, markers: Markers, *, limit: int,
             before: tuple[int, int] | None) -> list[InboxRow]:
        rows = sorted((r for r in self._rows(user) if self._matches(r, filters, markers)),
                      key=_newest_first)
        page: list[InboxRow] = []
        for row in rows:
            if len(page) >= limit:
                break
            if before is not None and (row.created_at, row.event_id) >= before:
                continue
            event = self._s.events.get(row.event_id)
            if event is None:  # the SQL store joins the event: a row without one is not listed
                continue
            page.append(_listed(row, event.payload))
        return page

    def members(self, user: str, event_id: int, *, limit: int,
                before: tuple[int, int] | None) -> list[InboxRow] | None:
        mine = self._s.notes.get(user, {})
        held = mine.get(event_id)
        if held is None:
            return None
        group = sorted((r for r in mine.values() if r.display_hash == held.display_hash
                        and (before is None or (r.created_at, r.event_id) < before)),
                       key=_newest_first)
        found: list[InboxRow] = []
        for row in group:
            event = self._s.events.get(row.event_id)
            if event is not None:  # as the page: a row without its event is not listed
                found.append(_listed(row, event.payload))
            if len(found) >= limit:
                break
        return found

    def page_view(self, user: str, filters: Filters, *, limit: int,
                  before: tuple[int, int] | None, bundles: Callable[[str], bool]) -> PageView:
        return pageview.page_view(self, user, filters, limit=limit, before=before,
                                  bundles=bundles)

    def group_info(self, user: str, groups: Sequence[str]) -> dict[str, GroupInfo]:
        wanted = set(groups)
        members: dict[str, list[NoteRow]] = {}
        for row in self._rows(user):
            if row.display_hash in wanted:
                members.setdefault(row.display_hash, []).append(row)
        info: dict[str, GroupInfo] = {}
        for group, rows in members.items():
            newest_first = sorted(rows, key=_newest_first)
            info[group] = info_of(summary_of([r.actor for r in newest_first]))
        return info

    def unread_counts(self, user: str, filters: Filters) -> tuple[int, int]:
        markers = self.load_markers(user)
        return (self.unread_count(user, filters, markers),
                self.unread_count(user, filters, markers, unseen=True))

    def unread_count(self, user: str, filters: Filters, markers: Markers | None = None, *,
                     unseen: bool = False) -> int:
        if markers is None:
            markers = self.load_markers(user)
        if unseen:
            markers = markers.unseen()
        unread = replace(filters, unread=True)
        count = 0
        for row in self._rows(user):
            if self._matches(row, unread, markers):
                count += 1
                if count >= UNREAD_CAP:
                    break
        return count

    # -- read state ----------------------------------------------------------------------------

    def _groups_where(self, user: str, rows: Iterable[NoteRow]) -> list[str]:
        return sorted({r.display_hash for r in rows})

    def groups_by_ids(self, user: str, event_ids: Sequence[int]) -> list[str]:
        mine = self._s.notes.get(user, {})
        return self._groups_where(user, (mine[e] for e in set(event_ids) if e in mine))

    def _matching(self, user: str, actor: str | None, type: str | None,
                  object: str | None) -> list[NoteRow]:
        if actor is None and type is None and object is None:
            return []
        return [r for r in self._rows(user)
                if (actor is None or r.actor == actor) and (type is None or r.type == type)
                and (object is None or r.object == object)]

    def groups_by_match(self, user: str, *, actor: str | None, type: str | None,
                        object: str | None) -> list[str]:
        return self._groups_where(user, self._matching(user, actor, type, object))

    def keys_by_match(self, user: str, *, actor: str | None, type: str | None,
                      object: str | None) -> list[NotificationKey]:
        return [NotificationKey(user, r.event_id, r.display_hash, r.bundle_base)
                for r in sorted(self._matching(user, actor, type, object),
                                key=lambda r: r.event_id)]

    def mark_groups(self, user: str, groups: Sequence[str], *, read: bool, now: int,
                    markers: Markers) -> int:
        wanted = set(groups)
        changed = 0
        for row in list(self._rows(user)):
            if row.display_hash not in wanted:
                continue
            if row.bundle_base and _unread(markers, row) != (not read):
                changed += 1
            if read:
                self._put(replace(row, read_at=now))
            else:
                self._put(replace(row, read_at=None, fresh_at=now))
        return changed

    def set_flags(self, user: str, groups: Sequence[str], *, on: int = 0, off: int = 0,
                  snoozed_until: int | None = None) -> int:
        wanted = set(groups)
        changed = 0
        for row in list(self._rows(user)):
            if row.display_hash not in wanted:
                continue
            flags = (row.flags | on) & ~off
            until = (snoozed_until if on & SNOOZED else None if off & SNOOZED
                     else row.snoozed_until)
            if row.bundle_base and flags != row.flags:
                changed += 1
            if (flags, until) != (row.flags, row.snoozed_until):
                self._put(replace(row, flags=flags, snoozed_until=until))
        return changed

    def snoozes(self, user: str, groups: Sequence[str]) -> dict[str, int]:
        wanted = set(groups)
        return {r.display_hash: r.snoozed_until for r in self._rows(user)
                if r.display_hash in wanted and r.flags & SNOOZED
                and r.snoozed_until is not None}

    def saved(self, keys: Sequence[NotificationKey]) -> list[NotificationKey]:
        notes = self._s.notes
        return [k for k in keys
                if (row := notes.get(k.user_id, {}).get(k.event_id)) is not None
                and row.flags & SAVED]

    def read_states(self, user: str, event_ids: Sequence[int]) -> list[ReadState]:
        mine = self._s.notes.get(user, {})
        return [ReadState(event_id=r.event_id, created_at=r.created_at, read_at=r.read_at,
                          fresh_at=r.fresh_at, type=r.type, category=r.category,
                          section=r.section)
                for r in (mine[e] for e in sorted(set(event_ids)) if e in mine)]

    # -- removal -------------------------------------------------------------------------------

    def keys_for_events(self, event_ids: Sequence[int]) -> list[NotificationKey]:
        keys: list[NotificationKey] = []
        for event_id in sorted(set(event_ids)):
            for user in sorted(self._s.holders.get(event_id, {})):
                row = self._s.notes[user][event_id]
                keys.append(NotificationKey(user, event_id, row.display_hash, row.bundle_base))
        return keys

    def remove(self, keys: Sequence[NotificationKey]) -> int:
        removed = 0
        for key in keys:
            if self._j.drop_in(self._s.notes, key.user_id, key.event_id) is not None:
                self._j.drop_in(self._s.holders, key.event_id, key.user_id)
                removed += 1
        # as the SQL store: the keys say which groups lost their base
        orphaned = {(k.user_id, k.display_hash) for k in keys if k.bundle_base}
        for user, group in sorted(orphaned):
            members = [r for r in self._rows(user) if r.display_hash == group]
            if members:
                newest = min(members, key=_newest_first)
                self._put(replace(newest, bundle_base=True))
        return removed

    def trim(self, user: str, cap: int) -> int:
        mine = self._s.notes.get(user, {})
        doomed = beyond_cap([(r.created_at, r.event_id, r.flags) for r in mine.values()], cap)
        return self.remove([NotificationKey(user, e, mine[e].display_hash, mine[e].bundle_base)
                            for _, e in doomed])

    def forget_bundle_locks(self, before: int, limit: int) -> int:
        return 0  # no lock state: the store's lock serialises units

    def compact_history(self, now: int) -> int:
        return 0  # no journal of writes
