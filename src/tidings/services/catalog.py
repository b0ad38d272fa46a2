"""The catalog of event types: declared in code or a TOML file, or stored by any process."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Sequence

from tidings.clock import Clock
from tidings.domain.types import EventType, Templates, TypeRegistry
from tidings.exceptions import InvalidEventType
from tidings.ports import Store, Tx

log = logging.getLogger("tidings.types")


class Catalog:
    """Types by name, kept in the store so every process sees the same ones.

    The types this process declares (``types``: the TOML file's, then those given in code)
    are stored the first time it reads the stored types (:meth:`load`), replacing stored
    copies of the same names; from then on the stored copy is the type, for this process
    and every other (:meth:`define` and ``PUT /v1/types`` replace it). A name not known here
    is read again from the store, so a worker started before a type was declared finds it.
    """

    def __init__(self, store: Store, clock: Clock, types: Iterable[EventType] = ()) -> None:
        self.store = store
        self.clock = clock
        self.types = TypeRegistry(types)
        self._unsaved: list[EventType] = list(self.types)  # declared here, not stored yet
        self._lock = threading.Lock()

    def define(self, event_type: EventType) -> EventType:
        """Declare (or replace) a type, stored so every process sees it."""
        definition = json.dumps(event_type.to_dict())
        now = self.clock.now_us()
        self.store.transact(lambda tx: tx.settings.save_type(event_type.name, definition, now))
        with self._lock:
            self.types.add(event_type)
            self._unsaved = [t for t in self._unsaved if t.name != event_type.name]
        return event_type

    def load(self) -> None:
        """Store this process's declared types (once), then read every stored type into the
        registry."""
        self._save_declared()
        with self.store.read() as tx:
            stored = tx.settings.load_types()
        loaded = []
        for name, definition in stored:
            try:
                data = json.loads(definition)
                data.pop("name", None)
                loaded.append(EventType.from_dict(name, data))
            except (InvalidEventType, ValueError) as exc:
                # stored before today's validation: skipped (and said), never fatal to readers
                log.warning("stored event type %r is not valid and is skipped: %s", name, exc)
        with self._lock:
            for event_type in loaded:
                self.types.add(event_type)

    def _save_declared(self) -> None:
        with self._lock:
            declared, self._unsaved = self._unsaved, []
        if not declared:
            return
        now = self.clock.now_us()

        def save(tx: Tx) -> None:
            for event_type in declared:
                tx.settings.save_type(event_type.name, json.dumps(event_type.to_dict()), now)

        try:
            self.store.transact(save)
        except BaseException:
            with self._lock:  # tried again at the next load
                self._unsaved = declared + self._unsaved
            raise

    @property
    def saved(self) -> bool:
        """Whether every type this process declares is stored (after the first :meth:`load`)."""
        return not self._unsaved

    def get(self, name: str) -> EventType:
        """The type, reading stored ones first if needed; UnknownEventType if nobody has it."""
        if name not in self.types:
            self.load()
        return self.types.get(name)

    def known(self, name: str) -> bool:
        if name not in self.types:
            self.load()
        return name in self.types

    def or_default(self, name: str) -> EventType:
        """The type, or default templates for one that is no longer declared."""
        if name in self.types:
            return self.types.get(name)
        return EventType(name=name, templates=Templates())

    def bundles(self, name: str) -> bool:
        return name in self.types and self.types.get(name).bundle != "none"

    def not_queryable(self, names: Iterable[str], types: Sequence[str] | None) -> list[str]:
        """Of the payload fields ``names``, those that no type (of ``types`` when given)
        marks ``queryable``; stored types are read again before one is refused."""
        names = list(names)
        if not names:  # nothing asked (every unnarrowed read): no type needs looking at
            return []

        def missing() -> list[str]:
            chosen = [self.types.get(t) for t in types if t in self.types] if types else list(
                self.types)
            marked = {name for t in chosen for name in t.queryable}
            return [name for name in names if name not in marked]

        gone = missing()
        if gone:
            self.load()  # another process may have declared it since
            gone = missing()
        return gone
