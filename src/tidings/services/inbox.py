"""Reading an inbox (pages with bundles rendered, capped unread counts), read and seen state."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypedDict, TypeVar, Unpack

from tidings.clock import Clock
from tidings.domain.bundling import UNREAD_CAP, count_display
from tidings.domain.cursor import decode_cursor, encode_cursor
from tidings.domain.events import check_object, check_user_id
from tidings.domain.fields import conditions
from tidings.domain.flags import INBOX, REASONS, SNOOZED, STATES
from tidings.domain.readstate import scope_name
from tidings.domain.views import (
    BundleMember,
    Filters,
    GroupInfo,
    InboxRow,
    Newer,
    Notification,
    Page,
    PageView,
    UnreadCount,
)
from tidings.exceptions import InvalidInput, NotFound, UnknownQueryField
from tidings.fanout.specs import unsnooze_spec
from tidings.i18n import normalise_locale
from tidings.ports import Store, Tx
from tidings.services import positions
from tidings.services.catalog import Catalog
from tidings.services.common import check_ids, check_limit
from tidings.services.listing import ItemDrawer

# (unit, user, event ids): what one recipient's deletion undoes besides the inbox
DeleteHook = Callable[[Tx, str, list[int]], None]

MAX_MARK_IDS = 1000
UNREAD_ONLY = Filters(unread=True)
EVERY_UNREAD = Filters(unread=True, state=None)  # archived and snoozed items too


T = TypeVar("T")


class Narrowing(TypedDict, total=False):
    """What narrows an inbox list or count (the keyword arguments of
    :meth:`InboxService.unread_count`)."""

    types: Sequence[str] | None
    category: str | None
    section: str | None
    actor: str | None
    object: str | None
    max_id: str | int | None
    since_id: str | int | None
    payload: Mapping[str, Any] | None
    reason: Sequence[str] | str | None
    participating: bool | None


PARTICIPATING = ("recipient", "mention")  # the reasons ``participating`` keeps


def reasons_filter(reason: Sequence[str] | str | None, participating: bool | None
                   ) -> tuple[str, ...] | None:
    """The reasons a list or count keeps: those ``reason`` names (``"a,b"`` or a list), those
    of ``participating`` (``recipient``, ``mention``), both when both are given; None: any.
    An unknown name is an :class:`InvalidInput` naming ``reason``."""
    if participating is not None and not isinstance(participating, bool):
        raise InvalidInput("participating must be true or false", field="participating")
    wanted: tuple[str, ...] | None = None
    if reason is not None:
        names = [r for r in reason.split(",") if r] if isinstance(reason, str) else reason
        if not isinstance(names, list | tuple) or not all(isinstance(r, str) for r in names):
            raise InvalidInput("reason must be a list of reasons", field="reason")
        unknown = [r for r in names if r not in REASONS]
        if unknown or not names:
            given = f"{unknown[0][:64]!r} is not" if unknown else "must name at least"
            raise InvalidInput(f"reason {given} one of {', '.join(REASONS)}", field="reason")
        wanted = tuple(r for r in REASONS if r in names)
    if participating:
        wanted = tuple(r for r in (PARTICIPATING if wanted is None else wanted)
                       if r in PARTICIPATING)
    return wanted


class InboxService:
    """One user's inbox: list, count, mark."""

    def __init__(self, store: Store, catalog: Catalog, clock: Clock,
                 delete_hooks: Sequence[DeleteHook] = (),
                 link_origins: Sequence[str] | None = None) -> None:
        self.store = store
        self.catalog = catalog
        self.clock = clock
        self.delete_hooks = list(delete_hooks)
        self.drawer = ItemDrawer(catalog.or_default, origins=link_origins)

    # -- reads ------------------------------------------------------------------------------

    def filters(self, types: Sequence[str] | str | None, category: str | None,
                section: str | None, unread: bool | None, *, actor: str | None = None,
                object: str | None = None, max_id: str | int | None = None,
                since_id: str | int | None = None,
                payload: Mapping[str, Any] | None = None,
                state: str | None = INBOX,
                reason: Sequence[str] | str | None = None,
                participating: bool | None = None) -> Filters:
        if types is not None:
            if isinstance(types, str):
                types = [t for t in types.split(",") if t]
            for name in types:
                self.catalog.get(name)
        if section is not None and section not in ("alert", "message"):
            raise InvalidInput("section must be alert or message", field="section")
        if category is not None and (not isinstance(category, str)
                                     or not 1 <= len(category) <= 64):
            raise InvalidInput("category must be 1-64 characters", field="category")
        if actor is not None:
            check_user_id(actor, "actor")
        if object is not None:
            check_object(object)
        below = check_ids([max_id], "max_id", "event id")[0] if max_id is not None else None
        above = (check_ids([since_id], "since_id", "event id")[0] if since_id is not None
                 else None)
        if state is not None and state not in STATES:
            raise InvalidInput(f"state must be one of {', '.join(STATES)}", field="state")
        fields = conditions(payload) if payload else ()
        refused = self.catalog.not_queryable([name for name, _ in fields], types or None)
        if refused:
            raise UnknownQueryField(
                f"payload.{refused[0]}: not a queryable field of "
                f"{'these types' if types else 'any type'} (a type lists its queryable "
                "payload fields)", field=f"payload.{refused[0]}")
        return Filters(tuple(types) if types else None, category, section, unread, actor=actor,
                       object=object, max_id=below, since_id=above, fields=fields, state=state,
                       reasons=reasons_filter(reason, participating))

    def notifications(self, user: str, *, types: Sequence[str] | None = None,
                      category: str | None = None, section: str | None = None,
                      unread: bool | None = None, limit: int = 20,
                      cursor: str | None = None, locale: str | None = None,
                      actor: str | None = None, object: str | None = None,
                      max_id: str | int | None = None, since_id: str | int | None = None,
                      payload: Mapping[str, Any] | None = None,
                      state: str | None = INBOX,
                      reason: Sequence[str] | str | None = None,
                      participating: bool | None = None) -> Page[Notification]:
        """A user's inbox, newest first, one item per display group, paged by cursor;
        ``actor``, ``object``, ``max_id``, ``since_id`` and conditions on the queryable
        ``payload`` fields are Jiepang's query dimensions; ``reason`` (names of
        :data:`tidings.domain.flags.REASONS`) and ``participating`` (``recipient`` or
        ``mention`` only) keep the items that arrived for those reasons. ``state``: the items
        in the inbox (neither archived nor snoozed; the default), or those ``archived``,
        ``saved`` or ``snoozed`` (None: every item, whatever its state)."""
        check_user_id(user)
        language = normalise_locale(locale)
        limit = check_limit(limit)
        filters = self.filters(types, category, section, unread, actor=actor, object=object,
                               max_id=max_id, since_id=since_id, payload=payload, state=state,
                               reason=reason, participating=participating)
        before = decode_cursor(cursor) if cursor else None
        with self.store.read() as tx:
            view = tx.inbox.page_view(user, filters, limit=limit + 1, before=before,
                                      bundles=self.catalog.bundles)
            snoozed = [r.display_hash for r in view.rows if r.flags & SNOOZED]
            if snoozed:  # their times to return, kept beside the rows
                until = tx.inbox.snoozes(user, snoozed)
                view = replace(view, rows=[
                    r._replace(snoozed_until=until.get(r.display_hash)) if r.flags & SNOOZED
                    else r for r in view.rows])
        return self._page(view, limit, language)

    def members(self, user: str, notification_id: str | int, *, limit: int = 20,
                cursor: str | None = None, locale: str | None = None) -> Page[BundleMember]:
        """The members of the display group holding the user's notification
        ``notification_id`` (a bundle opened), newest first, paged by cursor, each drawn
        alone; NotFound unless the user holds that notification."""
        check_user_id(user)
        (number,) = check_ids([notification_id], "id")
        limit = check_limit(limit)
        language = normalise_locale(locale)
        before = decode_cursor(cursor) if cursor else None
        with self.store.read() as tx:
            rows = tx.inbox.members(user, number, limit=limit + 1, before=before)
            markers = tx.inbox.load_markers(user) if rows else None
        if rows is None:
            raise NotFound(f"notification {notification_id} of {user} does not exist")
        page = rows[:limit]
        items = [self.drawer.member(row, markers, language) for row in page] if markers else []
        last = page[-1] if page else None
        more = len(rows) > limit
        return Page(items, encode_cursor(last.created_at, last.event_id)
                    if more and last else None)

    def newer(self, user: str, after: tuple[int, int] | None, *, limit: int,
              locale: str | None = None) -> Newer:
        """What a live stream announces and replays: :func:`~tidings.services.positions.newer`."""
        return positions.newer(self.store, self.catalog.bundles, self.drawer, user, after,
                               limit=limit, locale=locale)

    async def first_page(self, user: str, *, limit: int = 20,
                         locale: str | None = None) -> Page[Notification]:
        """:meth:`notifications`' first page, not filtered, awaited on the running event loop
        (:class:`tidings.ports.AsyncStore`)."""
        view, limit, language = await self._first_view(user, limit, locale)
        return self._page(view, limit, language)

    async def first_page_encoded(self, user: str, *, limit: int, locale: str | None,
                                 encode: Callable[[Notification], bytes]) -> Page[bytes]:
        """:meth:`first_page` with each item as ``encode`` gives it (its JSON, say), kept by
        the drawer so an item listed again is neither built nor encoded again."""
        view, limit, language = await self._first_view(user, limit, locale)
        encoded = self.drawer.encoded
        return self._listed(view, limit, lambda row, info: encoded(
            row, info, view.markers, language, encode))

    async def _first_view(self, user: str, limit: int, locale: str | None
                          ) -> tuple[PageView, int, str]:
        check_user_id(user)
        language = normalise_locale(locale)
        limit = check_limit(limit)
        view = await self.store.aio.page_view(user, limit=limit + 1,
                                              bundles=self.catalog.bundles)
        return view, limit, language

    @staticmethod
    def _listed(view: PageView, limit: int,
                draw: Callable[[InboxRow, GroupInfo | None], T]) -> Page[T]:
        """``draw`` of each of ``view``'s first ``limit`` rows with its group, and the cursor
        past them when there are more (the view reads one row beyond the limit)."""
        page = view.rows[:limit]
        last = page[-1] if page else None
        more = len(view.rows) > limit
        return Page([draw(row, view.groups.get(row.display_hash)) for row in page],
                    encode_cursor(last.created_at, last.event_id) if more and last else None)

    def _page(self, view: PageView, limit: int, language: str) -> Page[Notification]:
        """The page's items drawn from ``view``'s first ``limit`` rows, and the cursor past
        them when there are more."""
        draw, markers = self.drawer.item, view.markers
        return self._listed(view, limit, lambda row, info: draw(row, info, markers, language))

    def _unread_filters(self, user: str, narrow: Narrowing) -> Filters:
        check_user_id(user)
        if all(value is None for value in narrow.values()):  # a badge: nothing to check
            return UNREAD_ONLY
        return self.filters(narrow.get("types"), narrow.get("category"), narrow.get("section"),
                            True, actor=narrow.get("actor"), object=narrow.get("object"),
                            max_id=narrow.get("max_id"), since_id=narrow.get("since_id"),
                            payload=narrow.get("payload"), reason=narrow.get("reason"),
                            participating=narrow.get("participating"))

    def unread_count(self, user: str, **narrow: Unpack[Narrowing]) -> UnreadCount:
        """Unread display groups, capped at 100 and shown as '99+'; narrowed like
        :meth:`notifications`."""
        count = self.store.unread_count(user, self._unread_filters(user, narrow))
        return UnreadCount(count, count_display(count))

    def unseen_count(self, user: str, **narrow: Unpack[Narrowing]) -> UnreadCount:
        """Unread display groups that arrived (or became unread again) after the seen
        watermark, capped like :meth:`unread_count`: what a badge shows until opened."""
        count = self.store.unread_count(user, self._unread_filters(user, narrow), unseen=True)
        return UnreadCount(count, count_display(count))

    def unread_counts(self, user: str, **narrow: Unpack[Narrowing]
                      ) -> tuple[UnreadCount, UnreadCount]:
        """:meth:`unread_count` and :meth:`unseen_count` in one read (one statement on SQL)."""
        filters = self._unread_filters(user, narrow)
        with self.store.read() as tx:
            unread, unseen = tx.inbox.unread_counts(user, filters)
        return UnreadCount(unread, count_display(unread)), UnreadCount(unseen,
                                                                       count_display(unseen))

    async def badge_counts(self, user: str) -> tuple[UnreadCount, UnreadCount]:
        """:meth:`unread_counts` of a badge (no narrowing) awaited on the running event loop
        (:class:`tidings.ports.AsyncStore`)."""
        check_user_id(user)
        unread, unseen = await self.store.aio.unread_counts(user)
        return UnreadCount(unread, count_display(unread)), UnreadCount(unseen,
                                                                       count_display(unseen))

    # -- read state -------------------------------------------------------------------------

    def mark_ids(self, user: str, ids: Sequence[str | int], *, read: bool) -> int:
        """Mark these notifications (and every member of their bundles) read or unread."""
        check_user_id(user)
        numbers = self._mark_ids(ids)
        now = self.clock.now_us()

        def work(tx: Tx) -> int:
            self._announce(tx, user)
            markers = tx.inbox.load_markers(user)
            groups = tx.inbox.groups_by_ids(user, numbers)
            return tx.inbox.mark_groups(user, groups, read=read, now=now, markers=markers)

        return self.store.transact(work)

    # -- triage: archive, save, snooze ------------------------------------------------------

    def triage(self, user: str, ids: Sequence[str | int], *, on: int = 0, off: int = 0,
               until: int | None = None) -> int:
        """Set the bits ``on`` and clear the bits ``off`` of the flags of these notifications'
        display groups (:mod:`tidings.domain.flags`: archived, saved, snoozed), as reading
        them reads their groups. Snoozing (SNOOZED in ``on``) needs ``until``, a time to come
        (µs): a job then (``run_after``) puts the groups back in the inbox, unread. NotFound,
        changing nothing, unless the user holds every one of the ids. Returns how many
        groups changed."""
        check_user_id(user)
        numbers = self._mark_ids(ids)
        now = self.clock.now_us()
        if on & SNOOZED:
            if until is None:
                raise InvalidInput("until is required to snooze", field="until")
            if until <= now:
                raise InvalidInput("until must be in the future", field="until")

        def work(tx: Tx) -> int:
            keys = tx.inbox.keys_of(user, numbers)
            held = {k.event_id for k in keys}
            missing = [number for number in numbers if number not in held]
            if missing:
                raise NotFound(f"notification {missing[0]} of {user} does not exist")
            groups = sorted({k.display_hash for k in keys})
            self._announce(tx, user)
            changed = tx.inbox.set_flags(user, groups, on=on, off=off,
                                         snoozed_until=until if on & SNOOZED else None)
            if on & SNOOZED and until is not None:
                tx.jobs.enqueue_many([unsnooze_spec(user, group, until) for group in groups])
            return changed

        return self.store.transact(work)

    def _mark_ids(self, ids: Sequence[str | int]) -> list[int]:
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise InvalidInput("ids must be a list", field="ids")
        if len(ids) > MAX_MARK_IDS:
            raise InvalidInput("at most 1,000 ids at a time", field="ids")
        return check_ids(ids)

    def mark_read_matching(self, user: str, *, actor: str | None = None,
                           type: str | None = None, object: str | None = None) -> int:
        """Jiepang's 'mark read by (from user, type, post)'."""
        check_user_id(user)
        if actor is None and type is None and object is None:
            raise InvalidInput("match needs at least one of actor, type, object", field="match")
        if actor is not None:
            check_user_id(actor, "match.actor")
        if object is not None:
            check_object(object, "match.object")
        now = self.clock.now_us()

        def work(tx: Tx) -> int:
            self._announce(tx, user)
            markers = tx.inbox.load_markers(user)
            groups = tx.inbox.groups_by_match(user, actor=actor, type=type, object=object)
            return tx.inbox.mark_groups(user, groups, read=True, now=now, markers=markers)

        return self.store.transact(work)

    def delete_matching(self, user: str, *, actor: str | None = None,
                        type: str | None = None, object: str | None = None) -> int:
        """Jiepang's 'delete by (to user, from user, type, post)' for one recipient (a like
        withdrawn from one user's view); :meth:`Publishing.retract` does it for every
        recipient. Returns how many notifications went."""
        check_user_id(user)
        if actor is None and type is None and object is None:
            raise InvalidInput("match needs at least one of actor, type, object", field="match")
        if actor is not None:
            check_user_id(actor, "match.actor")
        if object is not None:
            check_object(object, "match.object")

        def work(tx: Tx) -> int:
            keys = tx.inbox.keys_by_match(user, actor=actor, type=type, object=object)
            removed = tx.inbox.remove(keys)
            self._deleted(tx, user, [k.event_id for k in keys])
            return removed

        return self.store.transact(work)

    def mark_all_read(self, user: str, *, types: Sequence[str] | None = None,
                      category: str | None = None, section: str | None = None) -> int:
        """Move a watermark: one narrow row per scope, never an update of notification rows.

        Returns how many unread items it covered (counted with the usual cap of 100).
        """
        check_user_id(user)
        filters = self.filters(types, category, section, True)
        scopes: list[str] = []
        if filters.types:
            scopes += [scope_name("type", t) for t in filters.types]
        if category is not None:
            scopes.append(scope_name("category", category))
        if section is not None:
            scopes.append(scope_name("section", section))
        if filters.types and (category is not None or section is not None):
            raise InvalidInput("give types, category or section, not several", field="types")
        if category is not None and section is not None:
            raise InvalidInput("give category or section, not both", field="category")
        if not scopes:
            scopes = ["all"]
        now = self.clock.now_us()
        if scopes == ["all"]:  # the store's own (one statement where it can)
            return self.store.mark_all_read(user, now)

        def work(tx: Tx) -> int:
            self._announce(tx, user)
            before = tx.inbox.unread_count(user, filters)
            for scope in scopes:
                tx.inbox.set_marker(user, scope, now)
            return before

        return self.store.transact(work)

    def mark_read_up_to(self, user: str, notification_id: str | int) -> int:
        """Gazelle's read-up-to-id: every notification at or below this one's place in the
        inbox (created_at, id) becomes read, through one watermark row. Returns how many
        unread items it covered (capped at 100); NotFound unless the user has it."""
        check_user_id(user)
        (number,) = check_ids([notification_id], "id")
        now = self.clock.now_us()

        def work(tx: Tx) -> int:
            position = tx.inbox.position_of(user, number)
            if position is None:
                raise NotFound(f"notification {notification_id} of {user} does not exist")
            self._announce(tx, user)
            markers = tx.inbox.load_markers(user)
            # the unread base rows at or below the position (``before`` is exclusive)
            covered = tx.inbox.page(user, EVERY_UNREAD, markers, limit=UNREAD_CAP,
                                    before=(position[0], position[1] + 1))
            if tx.inbox.set_position(user, position, now):
                return len(covered)
            # Behind the current mark: what it does not cover there was marked unread since;
            # page on past each batch (a hot store shows a unit's marks once it has committed).
            batch = covered
            while batch:
                tx.inbox.mark_groups(user, [row.display_hash for row in batch], read=True,
                                     now=now, markers=markers)
                if len(batch) < UNREAD_CAP:
                    break
                batch = tx.inbox.page(user, EVERY_UNREAD, markers, limit=UNREAD_CAP,
                                      before=(batch[-1].created_at, batch[-1].event_id))
            return len(covered)

        return self.store.transact(work)

    def delete_notification(self, user: str, notification_id: str | int) -> None:
        """Remove one recipient's notification (others keep theirs); a bundle it was the
        newest member of is shown by its next newest. NotFound unless the user has it."""
        check_user_id(user)
        (number,) = check_ids([notification_id], "id")

        def work(tx: Tx) -> None:
            keys = tx.inbox.keys_of(user, [number])
            if not keys:
                raise NotFound(f"notification {notification_id} of {user} does not exist")
            self._announce(tx, user)
            tx.inbox.remove(keys)
            self._deleted(tx, user, [number])

        self.store.transact(work)

    def mark_seen(self, user: str, until: int | None = None) -> None:
        """Move the seen watermark (badge seen, not read)."""
        check_user_id(user)
        now = self.clock.now_us()
        mark = now if until is None else min(until, now)
        def work(tx: Tx) -> None:
            self._announce(tx, user)
            tx.inbox.set_marker(user, "seen", mark)

        self.store.transact(work)

    def _deleted(self, tx: Tx, user: str, event_ids: list[int]) -> None:
        for hook in self.delete_hooks:
            hook(tx, user, event_ids)

    def _announce(self, tx: Tx, user: str) -> None:
        """Tell live listeners of ``user`` (every device's stream) once ``tx`` commits."""
        notifier = self.store.notifier
        tx.after_commit(lambda: notifier.changed([user]))

    def watch(self, user: str, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from any thread) when ``user``'s inbox or counts may have
        changed; returns the function that stops it."""
        check_user_id(user)
        return self.store.notifier.subscribe(user, callback)

    @property
    def watch_reaches_other_processes(self) -> bool:
        """Whether :meth:`watch` hears of changes made by other processes too (else poll)."""
        return self.store.notifier.cross_process
