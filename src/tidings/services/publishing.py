"""Publishing: accept events durably (event + fan-out job in one unit), look up, retract."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio.to_thread

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
    InvalidInput,
    NotFound,
    TidingsError,
)
from tidings.fanout.specs import fanout_job, fanout_spec, retention_spec
from tidings.jobs.model import JobSpec
from tidings.ports import Publication, Store, Tx
from tidings.services.catalog import Catalog
from tidings.services.common import check_ids

RetractHook = Callable[[Tx, list[int]], None]
# each item's outcome in its place (None where it is stored), the items to store, their places
Each = tuple[list[Published | TidingsError | None], list[Publication], list[int]]
# each item's trace context (tidings.tracing.carrier), for its fan-out job to join its trace
Traces = Sequence[Mapping[str, str] | None] | None


def _span_name(traces: Traces) -> str:
    """A publish's span: the caller's, or a group of callers' (each with its own trace)."""
    return "tidings.publish" if traces is None else "tidings.publish.group"


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
        with tracing.span("tidings.publish", {"tidings.event.count": len(batch)}):
            prepared = [self._publication(event, scope) for event in batch]  # jobs join it
            keys = [p.event.idempotency_key for p in prepared
                    if p.event.idempotency_key is not None]
            if len(keys) != len(set(keys)):
                raise InvalidInput("the batch repeats an idempotency_key",
                                   field="idempotency_key")
            return [o for o in self.store.publish(prepared, self.clock.now_us, all_or_none=True)
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
        with tracing.span(_span_name(traces), {"tidings.event.count": len(items)}):
            outcomes, prepared, places = self._prepare_each(items, traces)
            stored = self.store.publish(prepared, self.clock.now_us) if prepared else []
        for place, outcome in zip(places, stored, strict=True):
            outcomes[place] = outcome
        return [o for o in outcomes if o is not None]

    async def commit_group(self, items: Sequence[tuple[Event | Mapping[str, Any], str]],
                           traces: Traces = None) -> list[Published | TidingsError]:
        """:meth:`publish_each` awaited on the running event loop: the store's step
        (:meth:`tidings.ports.AsyncStore.publish`, one statement with no thread where the
        store can). Where the types must be read or saved first, the items are prepared in
        a worker thread. ``traces``: each item's trace context, that its fan-out job joins."""
        if self.catalog.saved and all(self._loaded(raw) for raw, _ in items):
            outcomes, prepared, places = self._prepare_each(items, traces)
        else:  # reading or saving the types is a round trip of its own
            outcomes, prepared, places = await anyio.to_thread.run_sync(
                self._saved_and_prepared, items, traces)
        if prepared:
            with tracing.span(_span_name(traces), {"tidings.event.count": len(prepared)}):
                stored = await self.store.aio.publish(prepared, self.clock.now_us)
            for place, outcome in zip(places, stored, strict=True):
                outcomes[place] = outcome
        return [o for o in outcomes if o is not None]

    def _loaded(self, raw: Event | Mapping[str, Any]) -> bool:
        """Whether preparing ``raw`` reads no stored type (its type is loaded, or it has no
        type to look up)."""
        name = raw.type if isinstance(raw, Event) else (
            raw.get("type") if isinstance(raw, Mapping) else None)
        return not isinstance(name, str) or name in self.catalog.types

    def _saved_and_prepared(self, items: Sequence[tuple[Event | Mapping[str, Any], str]],
                            traces: Traces) -> Each:
        self._declared_types_saved()
        return self._prepare_each(items, traces)

    def _publication(self, event: Event | Mapping[str, Any], scope: str) -> Publication:
        """The event checked as :meth:`prepare` does, with its fan-out job, in ``scope``."""
        checked, payload, event_type = self.prepare(event)
        return Publication(checked, payload, fanout_job(event_type.priority,
                                                        checked.created_at), scope)

    def _prepare_each(self, items: Sequence[tuple[Event | Mapping[str, Any], str]],
                      traces: Traces = None) -> Each:
        """Each item prepared, or its refusal in its place among the outcomes; the prepared
        items and their places. Each item's fan-out job is made in its trace (``traces``)."""
        outcomes: list[Published | TidingsError | None] = [None] * len(items)
        prepared: list[Publication] = []
        places: list[int] = []
        for place, (raw, scope) in enumerate(items):
            try:
                event, payload, event_type = self.prepare(coerce_event(raw))
                with tracing.resumed(traces[place] if traces else None):
                    job = fanout_job(event_type.priority, event.created_at)
                prepared.append(Publication(event, payload, job, check_scope(scope)))
            except InvalidInput as exc:
                outcomes[place] = exc
                continue
            places.append(place)
        return outcomes, prepared, places

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
