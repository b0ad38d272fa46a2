"""tidings: a notification and activity-feed engine.

Publish events; tidings works out who should hear of each, fills inboxes, bundles, counts what
is unread and tracks read state. See the README for a ten-line example.

The names below load on first use, so ``import tidings.client`` (an application that only talks
HTTP) does not load the engine, SQLAlchemy or the drivers.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tidings.config import Config
    from tidings.domain.events import Event
    from tidings.domain.types import EventType, Templates
    from tidings.domain.views import Notification, Page, Published, StoredEvent, UnreadCount
    from tidings.engine import Tidings
    from tidings.exceptions import TidingsError

_WHERE = {
    "Config": "tidings.config",
    "Event": "tidings.domain.events",
    "EventType": "tidings.domain.types",
    "Notification": "tidings.domain.views",
    "Page": "tidings.domain.views",
    "Published": "tidings.domain.views",
    "StoredEvent": "tidings.domain.views",
    "Templates": "tidings.domain.types",
    "Tidings": "tidings.engine",
    "TidingsError": "tidings.exceptions",
    "UnreadCount": "tidings.domain.views",
}

__all__ = [
    "Config",
    "Event",
    "EventType",
    "Notification",
    "Page",
    "Published",
    "StoredEvent",
    "Templates",
    "Tidings",
    "TidingsError",
    "UnreadCount",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tidings' has no attribute {name!r}")
