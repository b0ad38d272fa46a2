"""Channels as data (Echo's notifiers): a name, what fan-out does for it, what a retraction
undoes, and its job handlers. The web channel is the inbox itself; the others are entries here,
so a new channel (SMS, chat) is one module and one entry, not a branch in the engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tidings.config import Config
from tidings.domain.preferences import Plan
from tidings.domain.types import EventType
from tidings.domain.views import StoredEvent
from tidings.jobs.context import Handler, JobContext
from tidings.ports import Tx


@dataclass(frozen=True)
class Outgoing:
    """One event's chunk on its way out: who gets it on which channel, decided by fan-out."""

    event: StoredEvent
    event_type: EventType
    bundle_hash: str
    plans: Mapping[str, Plan]
    prefs: Mapping[str, Mapping[str, object]]
    now: int


@dataclass(frozen=True)
class Channel:
    """An outbound channel."""

    name: str
    schedule: Callable[[JobContext, Tx, Outgoing], None]
    on_retract: Callable[[Tx, list[int]], None] | None = None
    # one recipient deleted notifications of these events: what it undoes for that user
    on_delete: Callable[[Tx, str, list[int]], None] | None = None
    handlers: Mapping[str, Handler] = field(default_factory=dict)
    # whether this installation delivers over it at all (e.g. email needs an SMTP server),
    # so a preferences page offers only what can arrive
    enabled: Callable[[Config], bool] = lambda _config: True

