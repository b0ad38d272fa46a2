"""Server-Sent Events: the unread count, new items and new timeline entries of one user, live.

A stream reads the store (the capped unread and unseen counts in one read, one newest-base-row
query and the newest page of the timeline) when the engine says the user's inbox or timeline changed
(:meth:`Tidings.watch`: a delivery, a followee's post reaching the timeline, a mark-read or
mark-seen on any device) and, as a safety net, every ``interval`` seconds. Where
the store tells every process of every change (PostgreSQL LISTEN/NOTIFY, Redis pub/sub) the
safety net is slow; elsewhere (SQLite, MariaDB with workers in other processes) it is the
``interval`` given.

Every event carries an ``id:``, the stream's place in the inbox and the timeline
(:mod:`tidings.api.resume`); a stream opened with ``Last-Event-ID`` first sends what came after
that place (at most :data:`~tidings.api.resume.REPLAY_BOUND` of each list, else one ``resync``).
At each look the stream announces the inbox items placed after its place, so an item deleted
or a bundle moved never makes it announce older ones again.

Each stream costs three reads per interval, so :class:`OpenStreams` bounds them: a user holds
at most ``per_user`` (a new one ends the oldest, which is told to wait a minute before it
reconnects), a process at most ``total`` (beyond it, 503 with ``Retry-After``).

A client that stops reading must not hold a stream, nor the buffers behind it, past its place:
every write has a deadline (``write_timeout``, ``TIDINGS_STREAM_WRITE_TIMEOUT``), and a stream
whose write does not finish in time, or that is ended while a write waits, has its connection
aborted (the kernel drops what it still held to send). A stream keeps its place in both caps
until its response is really over, so an ended one that still waits counts until it is gone,
and a user's new stream waits (at most the deadline) for the place of the one it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from tidings.api.jsonshape import dumps
from tidings.api.resume import REPLAY_BOUND, Position
from tidings.api.schemas.graph import timeline_item
from tidings.domain.views import Newer, TimelineEntry, UnreadCount
from tidings.engine import Tidings

KEEPALIVE_SECONDS = 15.0
TIMELINE_LOOK = 20  # the newest timeline entries a stream compares with what it announced
INBOX_LOOK = 10  # the inbox items a stream reads at each look (more only when more came)
SAFETY_NET_SECONDS = 10.0  # the poll interval where every change is announced
EVICTED_RETRY_MS = 60_000  # how long a stream ended for a newer one waits to reconnect
ENDED_WRITE_SECONDS = 0.1  # how long an ended stream's last frames may wait to be written


# the scope key under which the app keeps the connection's transport (see transport_of)
TRANSPORT = "tidings.transport"


@dataclass(eq=False)
class Slot:
    """One open stream's place. ``ended`` is set when a newer stream of its user takes it; the
    place is free once the stream's response is over (:meth:`OpenStreams.close`)."""

    user: str
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class OpenStreams:
    """The live streams of this process, bounded per user and in all, each counted until its
    response is over. Used from the event loop only, so it needs no lock."""

    def __init__(self, *, per_user: int = 5, total: int = 200,
                 on_change: Callable[[int], None] | None = None) -> None:
        self.per_user = per_user
        self.total = total
        self.on_change = on_change  # told +1 / -1 as a stream opens / closes (metrics)
        self._held: dict[str, list[Slot]] = {}
        self._count = 0
        self._freed: asyncio.Event | None = None  # set (and replaced) when a place is freed

    async def open(self, user: str, wait: float) -> Slot | None:
        """A place for a new stream of ``user``, or None when the process holds ``total``
        already (or the user's ended streams are still not gone after ``wait`` seconds). At
        ``per_user`` the user's oldest stream is ended and its place awaited."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + wait
        while len(self._held.get(user, [])) >= self.per_user:
            held = self._held[user]
            live = [slot for slot in held if not slot.ended.is_set()]
            for slot in live[:len(held) - self.per_user + 1]:
                slot.ended.set()
            if self._freed is None:
                self._freed = asyncio.Event()
            freed = self._freed
            try:
                await asyncio.wait_for(freed.wait(), max(give_up - loop.time(), 0))
            except TimeoutError:
                return None
        if self._count >= self.total:
            return None
        slot = Slot(user)
        self._held.setdefault(user, []).append(slot)
        self._count += 1
        if self.on_change is not None:
            self.on_change(1)
        return slot

    def close(self, slot: Slot) -> None:
        """Give the place back (and end its stream if it still runs); idempotent."""
        slot.ended.set()
        held = self._held.get(slot.user, [])
        if slot in held:
            held.remove(slot)
            self._count -= 1
            if self.on_change is not None:
                self.on_change(-1)
            if not held:
                del self._held[slot.user]
            if self._freed is not None:
                self._freed.set()
                self._freed = None

    def __len__(self) -> int:
        return self._count


class Stalled(Exception):
    """A stream's write did not finish by its deadline, or the stream was ended meanwhile."""


class Transport(Protocol):
    """What a stream needs of its connection's transport (asyncio's, or uvloop's: those are
    not subclasses of asyncio's classes)."""

    def get_extra_info(self, name: str, default: Any = None) -> Any: ...

    def abort(self) -> None: ...


def transport_of(send: Send) -> Transport | None:
    """The connection's transport, where the server lets us reach it: uvicorn's ``send`` is a
    method of its request cycle, which holds it. Elsewhere None: a stalled stream then ends
    by giving up its response, and the server closes the connection, as ASGI asks."""
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if all(callable(getattr(transport, name, None))
           for name in ("get_extra_info", "abort")):
        return cast(Transport, transport)
    return None


def abort(transport: Transport | None) -> None:
    """Drop the connection now, and what it still had to send: with SO_LINGER 0 the kernel
    resets it instead of keeping its buffer for a client that does not read."""
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class LiveResponse(StreamingResponse):
    """A stream that gives its place back however it ends (finished, ended for a newer one,
    the client gone, cut off for not reading, or cancelled before its first frame)."""

    def __init__(self, frames: AsyncIterator[str], streams: OpenStreams, slot: Slot,
                 write_timeout: float) -> None:
        super().__init__(frames, media_type="text/event-stream",
                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self._streams = streams
        self._slot = slot
        self._write_timeout = write_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport = scope.get(TRANSPORT)
        slot, deadline = self._slot, self._write_timeout

        async def bounded(message: Message) -> None:
            writing = asyncio.ensure_future(send(message))
            ended = asyncio.ensure_future(slot.ended.wait())
            try:
                await asyncio.wait([writing, ended], timeout=deadline,
                                   return_when=asyncio.FIRST_COMPLETED)
                if not writing.done() and ended.done():  # its last frames get a moment
                    await asyncio.wait([writing], timeout=min(deadline, ENDED_WRITE_SECONDS))
            finally:
                ended.cancel()
            if not writing.done():
                writing.cancel()
                abort(transport)
                raise Stalled
            writing.result()

        try:
            await super().__call__(scope, receive, bounded)
        except* Stalled:
            pass  # aborted (or, without a transport, left to the server to close)
        finally:
            self._streams.close(self._slot)


def sse(event: str, data: Any, position: Position | None = None) -> str:
    """One event's frame; with ``position``, its ``id:`` (where the stream is once the
    client has it: see :mod:`tidings.api.resume`)."""
    line = "" if position is None else f"id: {position.event_id()}\n"
    return f"{line}event: {event}\ndata: {dumps(data).decode()}\n\n"


async def user_stream(tidings: Tidings, user: str, *, locale: str | None,
                      disconnected: Callable[[], Any], slot: Slot, interval: float = 0.5,
                      resume: Position | None = None) -> AsyncIterator[str]:
    """Yield SSE frames: ``unread`` when the count changes, ``notification`` for new items,
    ``timeline`` for new entries of the timeline (oldest first), each with its ``id:``, until
    the client goes or ``slot`` is taken by a newer stream. ``resume`` (the client's
    ``Last-Event-ID``): first what came after it, or one ``resync`` when too much did."""
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def changed() -> None:  # from any thread
        with contextlib.suppress(RuntimeError):  # the loop is gone: the stream is over
            loop.call_soon_threadsafe(wake.set)

    # off the loop: the first watcher of a process waits for its LISTEN connection
    stop_watching = await run_in_threadpool(tidings.watch, user, changed)
    if tidings.watch_reaches_other_processes:
        interval = max(interval, SAFETY_NET_SECONDS)
    try:
        yield "retry: 2000\n\n"
        async for frame in _frames(tidings, user, locale, disconnected, slot, interval, wake,
                                   resume):
            yield frame
    finally:
        stop_watching()


@dataclass
class Look:
    """One look at the user's lists: the counts, the inbox items after the stream's place,
    and the timeline's newest entries (or, replaying, those above the stream's place)."""

    counts: tuple[UnreadCount, UnreadCount]
    inbox: Newer
    entries: list[TimelineEntry]
    timeline_complete: bool = True


def _look(tidings: Tidings, user: str, locale: str | None, place: Position | None,
          replaying: bool) -> Look:
    # both counts in one read: two reads could straddle a delivery and announce an unseen
    # item that is not unread
    counts = tidings.unread_counts(user)
    inbox = tidings.inbox
    if place is None:  # a first look: where the lists are, nothing to announce
        return Look(counts, inbox.newer(user, None, limit=1, locale=locale),
                    tidings.timeline(user, limit=TIMELINE_LOOK).items)
    newer = inbox.newer(user, place.inbox, limit=REPLAY_BOUND if replaying else INBOX_LOOK,
                        locale=locale)
    if not newer.complete and not replaying:  # more than a look holds came at once
        newer = inbox.newer(user, place.inbox, limit=REPLAY_BOUND, locale=locale)
    if not replaying:
        return Look(counts, newer, tidings.timeline(user, limit=TIMELINE_LOOK).items)
    return Look(counts, newer, *_timeline_above(tidings, user, place.timeline))


def _timeline_above(tidings: Tidings, user: str, above: int) -> tuple[list[TimelineEntry], bool]:
    """The timeline's entries above ``above`` (newest first), and whether that is all of
    them (at most :data:`REPLAY_BOUND`)."""
    page = tidings.timeline(user, limit=REPLAY_BOUND, since_id=above or None)
    return page.items, page.next_cursor is None


async def _frames(tidings: Tidings, user: str, locale: str | None,
                  disconnected: Callable[[], Any], slot: Slot, interval: float,
                  wake: asyncio.Event, resume: Position | None) -> AsyncIterator[str]:
    last_count: tuple[int, int] | None = None
    place = resume  # None until the first look tells where the lists are
    timeline = Announced(floor=None if resume is None else resume.timeline)
    replaying = resume is not None
    idle = 0.0
    while not slot.ended.is_set() and not await disconnected():
        wake.clear()
        try:
            look = await run_in_threadpool(_look, tidings, user, locale, place, replaying)
            if place is not None and not replaying and timeline.overflows(look.entries):
                # a whole look of new entries: read all of them since the stream's place
                entries, complete = await run_in_threadpool(
                    _timeline_above, tidings, user, place.timeline)
                look = Look(look.counts, look.inbox, entries, complete)
        except Exception:  # a store outage: keep the stream, try again later
            await _pause(slot, min(interval, 1.0))
            continue
        frames: list[str] = []
        fresh_entries: list[TimelineEntry] = []
        if place is None:  # the first look of a new stream: only the counts are news
            timeline.fresh(look.entries)
            place = Position().at_inbox(look.inbox.top).at_timeline(
                max((e.id for e in look.entries), default=0))
        else:
            if replaying and (look.inbox.top or (0, 0)) < place.inbox:
                # the client's newest items are gone (deleted, trimmed), or its id is from a
                # clock ahead of ours: what comes next is placed after the inbox's newest now
                place = Position(look.inbox.top or (0, 0), place.timeline)
            missed = {"notifications": not look.inbox.complete,
                      "timeline": not look.timeline_complete}
            if look.timeline_complete:
                fresh_entries = timeline.fresh(look.entries)
            else:  # go on from the newest entries
                timeline = Announced()
                timeline.fresh(look.entries[:TIMELINE_LOOK])
                place = place.at_timeline(max((e.id for e in look.entries), default=0))
            if not look.inbox.complete:
                place = place.at_inbox(look.inbox.top)
            if any(missed.values()):
                frames.append(sse("resync", missed, place))
            for position, item in look.inbox.items:
                place = place.at_inbox(position)
                frames.append(sse("notification", item.to_dict(), place))
            place = place.at_inbox(look.inbox.top)
        replaying = False
        count, unseen = look.counts
        current = (count.count, unseen.count)
        if current != last_count:
            frames.append(sse("unread", {"count": count.count, "display": count.display,
                                         "unseen": unseen.count,
                                         "unseen_display": unseen.display}, place))
            last_count = current
        for entry in fresh_entries:
            place = place.at_timeline(entry.id)
            frames.append(sse("timeline", timeline_item(entry), place))
        if frames:
            idle = 0.0
            for frame in frames:
                yield frame
        started = loop_time()
        await _pause(slot, interval, wake)
        if not frames:
            idle += loop_time() - started
            if idle >= KEEPALIVE_SECONDS:
                idle = 0.0
                yield ": keepalive\n\n"
    if slot.ended.is_set():
        yield f"retry: {EVICTED_RETRY_MS}\n\n"


class Announced:
    """The timeline entries a stream has seen, so that each new one is announced once.

    The stream looks at the newest :data:`TIMELINE_LOOK` entries each time. New are those it
    has not seen that are newer than the oldest it saw: an entry whose transaction committed
    late (a lower id appearing after a higher one) is still announced, while an older one
    merely uncovered (moving into the window after a retraction, or back-filled by a follow)
    is not.
    """

    def __init__(self, floor: int | None = None) -> None:
        self.seen: set[int] = set()
        # the oldest id of the last non-empty look (or, resuming, the newest id the client had)
        self.floor = floor

    def overflows(self, entries: list[TimelineEntry]) -> bool:
        """Whether every entry of a full look is new: more may have come than a look holds."""
        return len(entries) >= TIMELINE_LOOK and all(
            e.id not in self.seen and (self.floor is None or e.id > self.floor)
            for e in entries)

    def fresh(self, entries: list[TimelineEntry]) -> list[TimelineEntry]:
        """The entries of this look to announce, oldest first."""
        new = [e for e in entries
               if e.id not in self.seen and (self.floor is None or e.id > self.floor)]
        self.seen = {e.id for e in entries}
        if self.seen:
            self.floor = min(self.seen)
        return list(reversed(new))


def loop_time() -> float:
    return asyncio.get_running_loop().time()


async def _pause(slot: Slot, seconds: float, wake: asyncio.Event | None = None) -> None:
    """Sleep ``seconds``, or less if the stream is ended or woken meanwhile."""
    waits = [asyncio.ensure_future(slot.ended.wait())]
    if wake is not None:
        waits.append(asyncio.ensure_future(wake.wait()))
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waits:
            waiter.cancel()
