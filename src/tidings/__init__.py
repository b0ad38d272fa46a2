"""tidings: a notification and activity-feed engine.

Publish events; tidings works out who should hear of each, fills inboxes, bundles, counts what
is unread and tracks read state. See the README for a ten-line example.
"""

from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.engine import Notification, Page, Published, Tidings, UnreadCount
from tidings.exceptions import TidingsError

__all__ = [
    "Config",
    "Event",
    "EventType",
    "Notification",
    "Page",
    "Published",
    "Templates",
    "Tidings",
    "TidingsError",
    "UnreadCount",
]
__version__ = "0.1.0"
