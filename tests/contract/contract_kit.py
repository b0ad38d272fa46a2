"""Small builders the contract tests share: events, notification rows, mail rows, jobs."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tidings import ports
from tidings.domain.bundling import display_hash
from tidings.domain.events import Event
from tidings.domain.views import Filters, InboxRow, MailBatchRow, NewNotification

T = TypeVar("T")
EVERYTHING = Filters()
_HASH = re.compile(r"[0-9a-f]{16}")


def key(label: str) -> str:
    """A bundle or display hash named by ``label`` in a test: a hash as the domain makes them
    (16 hex characters; one already is kept)."""
    return label if _HASH.fullmatch(label) else hashlib.sha1(label.encode()).hexdigest()[:16]


def write(store: ports.Store, work: Callable[[ports.Tx], T]) -> T:
    """Run ``work`` in a unit that may write (shorter to read than ``store.transact``)."""
    return store.transact(work)


def read(store: ports.Store, work: Callable[[ports.Tx], T]) -> T:
    """Run ``work`` in a unit that only reads."""
    with store.read() as tx:
        return work(tx)


def publish(store: ports.Store, now: int, *, type: str = "comment", actor: str | None = "ann",
            object: str | None = "post:1", payload: dict[str, Any] | None = None,
            key: str | None = None, created_at: int | None = None) -> int:
    """Store one event; return its id."""
    event = Event(type=type, actor=actor, object=object, payload=payload or {"n": 1},
                  idempotency_key=key, created_at=created_at)
    return write(store, lambda tx: tx.events.insert(
        event, json.dumps(dict(event.payload), separators=(",", ":")), now))


def note(user: str, event_id: int, created_at: int, *, group: str | None = None,
         bundle: str = "b", type: str = "comment", category: str = "general",
         section: str = "alert", actor: str | None = "ann",
         object: str | None = "post:1",
         fields: tuple[tuple[str, str], ...] = ()) -> NewNotification:
    """A notification row; ``group`` defaults to a display group of its own."""
    return NewNotification(
        user_id=user, event_id=event_id, created_at=created_at, type=type, category=category,
        section=section, actor=actor, object=object, bundle_hash=key(bundle),
        display_hash=key(group) if group is not None else display_hash(key(bundle), event_id),
        fields=fields)


def deliver(store: ports.Store, rows: Sequence[NewNotification]) -> None:
    write(store, lambda tx: tx.inbox.insert(rows))


def page(store: ports.Store, user: str, filters: Filters = EVERYTHING, *, limit: int = 100,
         before: tuple[int, int] | None = None) -> list[InboxRow]:
    def work(tx: ports.Tx) -> list[InboxRow]:
        markers = tx.inbox.load_markers(user)
        return tx.inbox.page(user, filters, markers, limit=limit, before=before)

    return read(store, work)


def ids(rows: Sequence[InboxRow]) -> list[int]:
    return [r.event_id for r in rows]


def unread(store: ports.Store, user: str, filters: Filters = EVERYTHING) -> int:
    def work(tx: ports.Tx) -> int:
        return tx.inbox.unread_count(user, filters, tx.inbox.load_markers(user))

    return read(store, work)


def mail_row(user: str, event_id: int, *, kind: str = "digest", bundle: str = "b",
             priority: int = 5, created_at: int = 1) -> MailBatchRow:
    return MailBatchRow(user_id=user, event_id=event_id, kind=kind, bundle_hash=key(bundle),
                        priority=priority, created_at=created_at)
