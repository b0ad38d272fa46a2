"""Publishing: accept events durably (event + fan-out job in one unit), look up, retract."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tidings import tracing
from tidings.clock import Clock
from tidings.domain.events import (
    DEFAULT_SCOPE,
    Event,
    Limits,
    check_object,
    check_scope,
    check_user_id,
    validate_event,
)
from tidings.domain.types import EventType
from tidings.domain.views import Published, StoredEvent
from tidings.exceptions import (
    IdempotencyConflict,
    InvalidInput,
    NotFound,
    StoreConflict,
    TidingsError,
)
from tidings.fanout.specs import fanout_job, fanout_spec, retention_spec
from tidings.jobs.model import JobSpec
from tidings.ports import Store, Tx
from tidings.services.catalog import Catalog
from tidings.services.common import check_ids

RetractHook = Callable[[Tx, list[int]], None]
# an event checked for publishing: the event, its payload JSON, its type, its key's scope
Prepared = tuple[Event, str, EventType, str]
# each item's trace context (tidings.tracing.carrier), for its fan-out job to join its trace
Traces = Sequence[Mapping[str, str] | None] | None


def coerce_event(event: Event | Mapping[str, Any]) -> Event:
    """An :class:`Event` from an Event or a mapping of its fields (unknown fields refused)."""
    if isinstance(event, Event):
        return event
    if not isinstance(event, Mapping):
        raise InvalidInput("an event must be an object", field="event")
    known = set(Event.__dataclass_fields__)
    for key in event:
        if key not in known:
            raise InvalidInput(f"unknown event field {key!r}", field=str(key))
    if "type" not in event or not isinstance(event["type"], str):
        raise InvalidInput("type is required and must be a string", field="type")
    data = dict(event)
    for key in ("recipients", "exclude"):
        if key in data and data[key] is None:
            data[key] = ()
    if data.get("payload") is None:
        data["payload"] = {}
    return Event(**data)


def _span_name(traces: Traces) -> str:
    """A publish's span: the caller's, or a group of callers' (each with its own trace)."""
    return "tidings.publish" if traces is None else "tidings.publish.group"


def _placed(traces: Traces, places: Sequence[int]) -> list[Mapping[str, str] | None] | None:
    """The traces of the items at ``places`` (those prepared), in their order."""
    return None if traces is None else [traces[p] for p in places]


class Publishing:
    """Publish, look up and retract events."""

    def __init__(self, store: Store, catalog: Catalog, clock: Clock, limits: Limits,
                 retract_hooks: Sequence[RetractHook] = ()) -> None:
        self.store = store
        self.catalog = catalog
        self.clock = clock
        self.limits = limits
        self.retract_hooks = list(retract_hooks)

    def _declared_types_saved(self) -> None:
        """The types this process declares are stored before its first event is, so the
        worker that fans it out (perhaps another process) reads the same type."""
        if not self.catalog.saved:
            self.catalog.load()

    def prepare(self, event: Event | Mapping[str, Any]) -> tuple[Event, str, EventType]:
        """Check an event as publish does: the event, its payload JSON and its type."""
        event = coerce_event(event)
        event_type = self.catalog.get(event.type)
        return event, validate_event(event, self.limits), event_type

    def publish_many(self, batch: Sequence[Event | Mapping[str, Any]], *,
                     scope: str = DEFAULT_SCOPE) -> list[Published]:
        """Store events and their fan-out jobs in one unit: all are accepted, or none.
        Idempotency keys are looked up and stored within ``scope``."""
        scope = check_scope(scope)
        self._declared_types_saved()
        prepared = [(*self.prepare(event), scope) for event in batch]
        keys = [e.idempotency_key for e, _, _, _ in prepared if e.idempotency_key is not None]
        if len(keys) != len(set(keys)):
            raise InvalidInput("the batch repeats an idempotency_key", field="idempotency_key")
        with tracing.span("tidings.publish", {"tidings.event.count": len(prepared)}):
            return [o for o in self._store(prepared, all_or_none=True)
                    if isinstance(o, Published)]

    def publish_each(self, items: Sequence[tuple[Event | Mapping[str, Any], str]],
                     traces: Traces = None) -> list[Published | TidingsError]:
        """Store (event, idempotency scope) items in one unit, each answered on its own: its
        :class:`Published`, or the error that refused it (bad input, a key used before with
        another body), the others stored all the same, as if each had been published by
        itself in turn (a key repeated among the items returns the first's event). Group
        commit: many requests' events in one transaction, each durable on return.
        ``traces``: each item's trace context, that its fan-out job joins."""
        self._declared_types_saved()
        each = self._prepare_each(items, loaded_only=False)
        assert each is not None
        outcomes, prepared, places = each
        with tracing.span(_span_name(traces), {"tidings.event.count": len(prepared)}):
            stored = self._store(prepared, traces=_placed(traces, places)) if prepared else []
        for place, outcome in zip(places, stored, strict=True):
            outcomes[place] = outcome
        return [o for o in outcomes if o is not None]

    def _prepare_each(self, items: Sequence[tuple[Event | Mapping[str, Any], str]], *,
                      loaded_only: bool) -> tuple[list[Published | TidingsError | None],
                                                  list[Prepared], list[int]] | None:
        """Each item prepared, or its refusal in its place among the outcomes; the prepared
        items and their places. ``loaded_only``: None where an item's type is not loaded
        (preparing it would read the stored types)."""
        outcomes: list[Published | TidingsError | None] = [None] * len(items)
        prepared: list[Prepared] = []
        places: list[int] = []
        for place, (raw, scope) in enumerate(items):
            try:
                event = coerce_event(raw)
                if loaded_only and event.type not in self.catalog.types:
                    return None
                prepared.append((*self.prepare(event), check_scope(scope)))
            except InvalidInput as exc:
                outcomes[place] = exc
                continue
            places.append(place)
        return outcomes, prepared, places

    async def publish_each_now(self, items: Sequence[tuple[Event | Mapping[str, Any], str]],
                               traces: Traces = None) -> list[Published | TidingsError] | None:
        """:meth:`publish_each` as one step of the store awaited on the running event loop,
        with no thread (:meth:`Store.publish_now`) — or None, having stored nothing, where it
        cannot: items of several scopes, a repeated key, a type not loaded yet, a key used
        before, a store that cannot (then :meth:`publish_each`, in a thread, answers them)."""
        if not self.catalog.saved:  # storing them is a write of its own, in a thread
            return None
        each = self._prepare_each(items, loaded_only=True)
        if each is None:
            return None
        outcomes, prepared, places = each
        if prepared:
            keys = [p[0].idempotency_key for p in prepared if p[0].idempotency_key is not None]
            scopes = {p[3] for p in prepared}
            if len(scopes) > 1 or len(keys) != len(set(keys)):
                return None
            carried = _placed(traces, places)
            jobs = []
            for n, (e, _, t, _) in enumerate(prepared):
                with tracing.resumed(carried[n] if carried else None):
                    jobs.append(fanout_job(t.priority, e.created_at))
            ids = await self.store.publish_now(
                [(event, payload) for event, payload, _, _ in prepared], jobs,
                self.clock.now_us(), scope=scopes.pop())
            if ids is None:
                return None
            for place, event_id in zip(places, ids, strict=True):
                outcomes[place] = Published(str(event_id), created=True)
        return [o for o in outcomes if o is not None]

    def _store(self, prepared: Sequence[Prepared], *, all_or_none: bool = False,
               traces: Traces = None) -> list[Published | TidingsError]:
        """The unit of :meth:`publish_many` and :meth:`publish_each`, set-based per scope:
        one read of the keys, one insert of the events, one of all the jobs. A conflicting
        key is its item's answer, or with ``all_or_none`` the whole unit's (nothing stored)."""
        by_scope: dict[str, list[int]] = {}
        for place, item in enumerate(prepared):
            by_scope.setdefault(item[3], []).append(place)

        def work(tx: Tx) -> list[Published | TidingsError]:
            now = self.clock.now_us()
            results: list[Published | TidingsError | None] = [None] * len(prepared)
            jobs: list[JobSpec] = []
            for scope, places in by_scope.items():
                keys = list(dict.fromkeys(k for k in (prepared[i][0].idempotency_key
                                                      for i in places) if k is not None))
                firsts = tx.events.get_by_keys(keys, scope=scope) if keys else {}
                fresh: list[int] = []
                taken: dict[str, int] = {}  # key → the place that stores it in this unit
                repeats: list[tuple[int, int]] = []
                for i in places:
                    event = prepared[i][0]
                    key = event.idempotency_key
                    if key is None:
                        fresh.append(i)
                        continue
                    first = firsts.get(key)
                    earlier = taken.get(key)
                    body = (first.body_hash if first is not None else
                            prepared[earlier][0].body_hash() if earlier is not None else None)
                    if body is not None and body != event.body_hash():
                        conflict = IdempotencyConflict(
                            f"idempotency_key {key!r} was used before with a different "
                            "event body")
                        if all_or_none:
                            raise conflict
                        results[i] = conflict
                    elif first is not None:
                        results[i] = Published(str(first.id), created=False)
                    elif earlier is not None:
                        repeats.append((i, earlier))
                    else:
                        taken[key] = i
                        fresh.append(i)
                ids = tx.events.insert_many([prepared[i][:2] for i in fresh], now,
                                            scope=scope)
                for i, event_id in zip(fresh, ids, strict=True):
                    event, _, event_type, _ = prepared[i]
                    with tracing.resumed(traces[i] if traces else None):
                        jobs.append(fanout_spec(event_id, event_type.priority,
                                                event.created_at))
                    results[i] = Published(str(event_id), created=True)
                for i, earlier in repeats:
                    results[i] = Published(str(ids[fresh.index(earlier)]), created=False)
            tx.jobs.enqueue_many(jobs)
            return [r for r in results if r is not None]

        try:
            return self.store.transact(work)
        except StoreConflict:
            # A concurrent publish with the same key won the race: now it is visible.
            return self.store.transact(work)

    def get_event(self, event_id: str | int) -> StoredEvent:
        (number,) = check_ids([event_id], "event_id", "event id")
        with self.store.read() as tx:
            found = tx.events.get(number)
        if found is None:
            raise NotFound(f"event {event_id} does not exist")
        return found

    def retract(self, *, type: str | None = None, actor: str | None = None,
                object: str | None = None, event_id: str | int | None = None) -> int:
        """Remove matching notifications from every inbox; later fan-out skips the events."""
        if event_id is None and type is None and actor is None and object is None:
            raise InvalidInput("retraction needs at least one of type, actor, object",
                               field="type")
        if type is not None:
            self.catalog.get(type)
        if actor is not None:
            check_user_id(actor, "actor")
        if object is not None:
            check_object(object)
        ids = check_ids([event_id], "event_id", "event id") if event_id is not None else None
        now = self.clock.now_us()

        def work(tx: Tx) -> int:
            removed = 0
            after = 0
            while True:
                if ids is not None:
                    batch = ids if after == 0 else []
                else:
                    batch = tx.events.find_ids(type=type, actor=actor, object=object,
                                               after_id=after)
                if not batch:
                    return removed
                tx.events.mark_retracted(batch, now)
                removed += tx.inbox.remove(tx.inbox.keys_for_events(batch))
                for hook in self.retract_hooks:
                    hook(tx, batch)
                after = max(batch)

        return self.store.transact(work)

    def redeliver_retained(self, *, batch: int = 500, upto: int | None = None) -> int:
        """Enqueue the fan-out of every retained, unretracted event again (up to the id
        ``upto``), dated at the event's creation: the back-fill path (inboxes and timelines
        only, never mail or webhooks), idempotent per (user, event). Refills a hot store
        with the events from before its journal; audiences are resolved as they are now.
        Returns how many events were queued."""
        queued = 0
        after = 0
        while True:
            def work(tx: Tx, start: int = after) -> list[int]:
                ids = [i for i in tx.events.find_ids(type=None, actor=None, object=None,
                                                     after_id=start, limit=batch)
                       if upto is None or i <= upto]
                specs: list[JobSpec] = []
                for event_id in ids:
                    event = tx.events.get(event_id)
                    if event is None:
                        continue
                    priority = (self.catalog.types.get(event.type).priority
                                if self.catalog.known(event.type) else 5)
                    specs.append(fanout_spec(event_id, priority, event.created_at))
                tx.jobs.enqueue_many(specs)
                return ids

            ids = self.store.transact(work)
            if not ids:
                return queued
            queued += len(ids)
            after = max(ids)

    def schedule_maintenance(self) -> None:
        self.store.transact(lambda tx: tx.jobs.enqueue_many([retention_spec()]))
