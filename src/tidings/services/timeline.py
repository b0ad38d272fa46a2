"""A user's timeline, whichever model wrote it (``docs/timelines.md``): the push mailbox
merged with the pulled newest posts of each followee, newest first by the event's time then
its id (the one order of inbox and timeline), paged by an opaque cursor or by numeric
``max_id`` / ``since_id``; and the follow / unfollow upkeep of
the mailboxes (back-fill, removal)."""

from __future__ import annotations

from collections.abc import Sequence

from tidings.domain.audience import ACTOR_FOLLOWERS
from tidings.domain.cursor import decode_cursor, encode_cursor
from tidings.domain.events import check_user_id
from tidings.domain.timeline import (
    PULL,
    PUSH,
    SOURCE_MODELS,
    START,
    TOP,
    Bounds,
    Candidate,
    Position,
    ReadPlan,
    SourceState,
    at,
    decide,
    merge,
    pull_cut,
)
from tidings.domain.views import Page, StoredEvent, TimelineEntry
from tidings.exceptions import InvalidInput, JobError
from tidings.fanout.privacy import permitted
from tidings.jobs.context import JobContext
from tidings.ports import Tx
from tidings.services.common import check_ids, check_limit


def bounds(tx: Tx, cursor: str | None, max_id: str | int | None,
           since_id: str | int | None) -> Bounds:
    """The range of positions a read asks for. The cursor (a position) and ``max_id`` are
    both upper bounds: given together, both apply (the lower one wins); ``since_id`` is the
    lower bound. ``max_id`` / ``since_id`` name events: each stands for its event's position
    (:func:`place_of`)."""
    below = above = None
    if max_id is not None:
        below = place_of(tx, check_ids([max_id], "max_id", "event id")[0], upper=True)
    if since_id is not None:
        above = place_of(tx, check_ids([since_id], "since_id", "event id")[0], upper=False)
    if cursor:
        after_cursor = decode_cursor(cursor)
        below = after_cursor if below is None else min(below, after_cursor)
    return Bounds(below=below, above=above)


def place_of(tx: Tx, event_id: int, *, upper: bool) -> Position:
    """The position ``max_id`` (``upper``) or ``since_id`` names: its event's, one primary
    key read. An id no event has (gone, or never given) falls just above the newest event
    below it, so that event is in a ``max_id`` read's range and out of a ``since_id`` one's."""
    near = tx.events.position_near(event_id)
    if near is None:
        return START
    if near[1] == event_id or not upper:
        return near
    return (near[0], near[1] + 1)


def _entry(event: StoredEvent) -> TimelineEntry:
    return TimelineEntry(id=event.id, type=event.type, actor=event.actor, object=event.object,
                         payload=event.payload, created_at=event.created_at)


class TimelineService:
    """Reads and upkeep of timelines over the store, under the configured model."""

    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self.config = ctx.config

    # -- models -------------------------------------------------------------------------------

    def types(self) -> list[str]:
        """The event types a timeline shows: those whose audience names the actor's
        followers."""
        return sorted(t.name for t in self.ctx.catalog.types if ACTOR_FOLLOWERS in t.audience)

    def model_of(self, state: SourceState | None) -> str:
        state = state or SourceState()
        return decide(self.config.timeline_model, state.model, state.followers,
                      self.config.celebrity_followers)

    def set_model(self, actor: str, model: str | None) -> None:
        """Override the model of one source (``push`` / ``pull``), or clear it (None)."""
        check_user_id(actor, "actor")
        if model is not None and model not in SOURCE_MODELS:
            raise InvalidInput("model must be push, pull or null", field="model")
        self.store.transact(lambda tx: tx.graph.set_timeline_model(actor, model))

    # -- the read -----------------------------------------------------------------------------

    def timeline(self, user: str, *, limit: int = 20, cursor: str | None = None,
                 max_id: str | int | None = None, since_id: str | int | None = None
                 ) -> Page[TimelineEntry]:
        """Newest first; the page's ``next_cursor`` pages older (None on the last page)."""
        check_user_id(user)
        limit = check_limit(limit)
        with self.store.read() as tx:
            want = bounds(tx, cursor, max_id, since_id)
            rows = self._read(tx, user, want, limit + 1)
        page = rows[:limit]
        more = len(rows) > limit
        return Page(page, encode_cursor(page[-1].created_at, page[-1].id) if more else None)

    def _read(self, tx: Tx, user: str, want: Bounds, n: int) -> list[TimelineEntry]:
        """The newest ``n`` entries in range the reader may see: each step the newest ``n``
        candidates of the mailbox and the pulls, merged, the pulled ones filtered; another
        step below the last if the filter left the page short."""
        plan = ReadPlan(self.config.timeline_model, self.config.celebrity_followers,
                        tuple(self.types()), self.config.timeline_cap)
        got = tx.timeline.merged(user, plan, limit=n, below=want.below, above=want.above)
        if got is None:
            return self._steps(tx, user, want, n)
        out: list[TimelineEntry] = []
        while got is not None:
            taken, mutes = got
            muted = set(mutes)
            out += [c.entry for c in taken
                    if not c.pulled or self._shown(tx, user, c, muted)]
            if len(taken) < n or len(out) >= n:
                break  # everything in range was seen, or the page is full
            got = tx.timeline.merged(user, plan, limit=n, below=at(taken[-1].entry),
                                     above=want.above)
        return out[:n]

    def _steps(self, tx: Tx, user: str, want: Bounds, n: int) -> list[TimelineEntry]:
        """:meth:`_read` where the store takes a step in several reads: the mailbox's head
        (with its floor), the followees' states, the pulls of those not wholly in it."""
        # the floor as a read with the cap sees it: what lies below is pulled
        floor, head = tx.timeline.head(user, limit=n, before=want.below, after=want.above,
                                       cap=self.config.timeline_cap)
        first: list[TimelineEntry] | None = head  # the first round's mailbox part
        above = want.above or START
        # A push deployment reads first only the followees not pushed from the start: every
        # other one's cut is the floor, which counts only once the read reaches the floor
        # (never, with ``since_id`` at or above it).
        push = self.config.timeline_model == PUSH
        whole = not push or floor <= above  # the sources that can count are all known
        sources, top = self._sources(tx.graph.unpushed_followees(user) if push
                                     else tx.graph.followee_sources(user), floor, above)
        types = self.types()
        muted: set[tuple[str, str]] | None = None  # read once, if anything is pulled
        out: list[TimelineEntry] = []
        below = want.below
        while len(out) < n:
            box: list[TimelineEntry] = []
            if first is not None:
                box, first = first, None
            elif below is None or below > max(floor, above):
                lowest = max(floor, above)
                box = tx.timeline.page(user, limit=n, before=below,
                                       after=None if lowest == START else lowest)
            pulled: list[StoredEvent] = []
            if not whole and (len(box) < n or at(box[-1]) <= max(top, floor)):
                whole = True  # the read reaches the floor: every followee's cut counts
                sources, top = self._sources(tx.graph.followee_sources(user), floor, above)
            if sources and (len(box) < n or at(box[-1]) <= top):
                pulled = tx.events.pull_page(sources, types=types, limit=n, below=below,
                                             above=want.above)
            taken = merge([box, [_entry(e) for e in pulled]], n)  # the mailbox's copy first
            if not taken:
                break
            from_pull = {e.id: e for e in pulled}
            boxed = {e.id for e in box}
            fresh = [from_pull[e.id] for e in taken if e.id not in boxed]
            if fresh and muted is None:
                muted = set(tx.graph.mutes(user))
            allowed = boxed | {e.id for e in self.visible(tx, user, fresh, muted or set())}
            out += [item for item in taken if item.id in allowed]
            if len(box) < n and len(pulled) < n and len(taken) == len(boxed | set(from_pull)):
                break  # everything in range was seen
            below = at(taken[-1])
        return out[:n]

    def _sources(self, states: dict[str, SourceState], floor: Position, above: Position
                 ) -> tuple[list[tuple[str, Position]], Position]:
        """The followees to pull, each with its cut (those cut above ``above``), and the
        highest cut."""
        sources = [(f, cut) for f, state in sorted(states.items())
                   if (cut := pull_cut(state, self.model_of(state), floor)) > above]
        return sources, max((cut for _, cut in sources), default=START)

    def _shown(self, tx: Tx, user: str, pulled: Candidate,
               muted: set[tuple[str, str]]) -> bool:
        """:meth:`visible` of one pulled candidate, reading the whole stored event only for
        a type with a privacy rule."""
        entry = pulled.entry
        if user in pulled.exclude or entry.actor == user:
            return False
        if muted and (("actor", entry.actor) in muted or ("object", entry.object) in muted):
            return False
        if self.ctx.catalog.types.get(entry.type).privacy is None:
            return True
        stored = tx.events.get(entry.id)
        return stored is not None and bool(self.visible(tx, user, [stored], muted))

    def visible(self, tx: Tx, user: str, events: Sequence[StoredEvent],
                muted: set[tuple[str, str]]) -> list[StoredEvent]:
        """Those of ``events`` fan-out would have pushed to ``user``: not excluded, not
        muted, and let through by the type's privacy rule (checked now; a rule this process
        has not registered hides the event)."""
        kept = []
        for event in events:
            if user in event.exclude or event.actor == user:
                continue
            if (event.actor is not None and ("actor", event.actor) in muted) or (
                    event.object is not None and ("object", event.object) in muted):
                continue
            event_type = self.ctx.catalog.types.get(event.type)
            if event_type.privacy is not None:
                try:
                    if not permitted(self.ctx, tx, event, event_type, [user]):
                        continue
                except JobError:
                    continue
            kept.append(event)
        return kept

    # -- follows ------------------------------------------------------------------------------

    def on_follow(self, tx: Tx, user: str, other: str) -> None:
        """A new follow of a pushed source (``push_from`` set) back-fills its newest posts (up
        to the cap) into this mailbox. A source read by pull now (a pull deployment, a hybrid
        source over the threshold, an override) gets no mailbox row: the pull model writes
        only the event. It is recorded as pulled, as its next post's fan-out would record it,
        so that if it is pushed again before that post, reads still pull it whole."""
        state = tx.graph.timeline_sources([other]).get(other, SourceState())
        if self.model_of(state) == PULL:
            if state.push_from is not None:
                tx.graph.set_push_from(other, None)
            return
        if state.push_from is None:
            return
        cap = self.config.timeline_cap
        newest = tx.events.pull_page([(other, TOP)], types=self.types(), limit=cap + 1,
                                     below=None,
                                     above=None if state.push_from == START else state.push_from)
        if len(newest) > cap:  # older posts stay out: reads pull them
            tx.timeline.raise_floor(user, at(newest[cap]))
        keep = self.visible(tx, user, newest[:cap], set(tx.graph.mutes(user)))
        tx.timeline.fill(user, [(e.id, e.created_at) for e in keep])
        tx.timeline.cap([user], cap)

    def on_unfollow(self, tx: Tx, user: str, other: str) -> None:
        """An unfollow takes the source's posts out of the mailbox."""
        tx.timeline.remove_source(user, other)
