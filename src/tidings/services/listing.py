"""Drawing the listed items of an inbox page, with the drawn items kept for the next read.

An item's title, body, link and HTML depend on its event, its display group's newest actors
and count, the language and the type's definition, and on nothing else: not on whose inbox
it is in, nor on its read, seen and triage state (archived, saved, snoozed). So an item is
drawn once per event and group state and served to every recipient from there (an event
fanned out to a thousand inboxes is rendered once, not a thousand times), and only its read,
seen and triage state, and why it reached the reader (``reason``, kept on their row), are
set per reader.
A page read again — the usual case: a badge click, a refresh, a poll — finds its items'
encoded forms here too. Every item handed out gets a payload of its own (a
fresh parse, or for a flat payload a copy of the kept one), so a caller that changes an
item's payload changes only its own copy.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from typing import Any

from tidings.clock import to_rfc3339
from tidings.domain.bundling import OTHERS_CAP
from tidings.domain.flags import ARCHIVED, SAVED, SNOOZED, reason_of
from tidings.domain.readstate import Markers
from tidings.domain.rendering import RenderContext, render_all
from tidings.domain.types import EventType
from tidings.domain.views import BundleMember, GroupInfo, InboxRow, Notification

_new = object.__new__
ITEM_CACHE_SIZE = 4_096  # drawn items kept per service; the oldest go first

# a Notification's fields but its actors and payload (read and seen set per reader), its
# actors, and its payload when that is flat (no list or object inside: a shallow copy is then
# a copy of its own)
Drawn = tuple[dict[str, Any], tuple[str, ...], dict[str, Any] | None]
_FLAT = (str, int, float, bool, type(None))


class ItemDrawer:
    """Turns base rows into :class:`Notification` items, keeping the drawn ones."""

    def __init__(self, types: Callable[[str], EventType], size: int = ITEM_CACHE_SIZE,
                 origins: Collection[str] | None = None) -> None:
        self._types = types
        self._origins = origins  # where absolute links may point (None: any http(s) origin)
        self._size = size
        # ordered by insertion, the oldest dropped first: an OrderedDict drops its first
        # entry at once, where a dict's first entry is found by scanning past the slots of
        # those dropped before it
        self._drawn: OrderedDict[Hashable, Drawn] = OrderedDict()
        self._encoded: OrderedDict[Hashable, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def item(self, row: InboxRow, info: GroupInfo | None, markers: Markers,
             language: str) -> Notification:
        return self._item(row, info, markers, language)

    def member(self, row: InboxRow, markers: Markers, language: str) -> BundleMember:
        """A group's member as its own item: drawn alone (the title in the singular), read
        by its own columns under the watermarks."""
        item = self._item(row, None, markers, language)
        return BundleMember(id=item.id, actor=item.actor, created_at=item.created_at,
                      read=item.read, title=item.title, payload=item.payload,
                      reason=item.reason)

    def encoded(self, row: InboxRow, info: GroupInfo | None, markers: Markers, language: str,
                encode: Callable[[Notification], bytes]) -> bytes:
        """``encode`` of the item (a caller's serialised form of it, such as its JSON), kept
        under the item's key: a page read again is put together from the kept forms, with
        no item built and nothing encoded."""
        key = (self._key(row, info, markers, language), encode)
        found = self._encoded.get(key)
        if found is None:
            found = encode(self._item(row, info, markers, language))
            self._keep(self._encoded, key, found)
        return found

    def _key(self, row: InboxRow, info: GroupInfo | None, markers: Markers,
             language: str) -> tuple[Any, ...]:
        unread = markers.is_unread(row.read_at, row.fresh_at, row.type, row.category,
                                   row.section, position=(row.created_at, row.event_id))
        seen = markers.is_seen(unread, row.fresh_at)
        group = (info.count, len(info.actors), tuple(info.actors[:3])) if info else None
        return (row, group, unread, seen, language, self._types(row.type).fingerprint)

    def _keep(self, kept: OrderedDict[Hashable, Any], key: Hashable, value: Any) -> None:
        with self._lock:
            if len(kept) >= self._size:
                kept.popitem(last=False)
            kept[key] = value

    def _item(self, row: InboxRow, info: GroupInfo | None, markers: Markers,
              language: str) -> Notification:
        _, group, unread, seen, _, fingerprint = self._key(row, info, markers, language)
        # the drawing is the event's in this group state, whoever reads it; with the row's
        # category and section, which a store may read from its type's current row (SQL)
        key = (row.event_id, row.created_at, row.category, row.section, group, language,
               fingerprint)
        drawn = self._drawn.get(key)
        if drawn is None:
            drawn = self._draw(row, info, self._types(row.type), language)
            self._keep(self._drawn, key, drawn)
        fields, actors, flat = drawn
        # A frozen dataclass's __init__ sets each of its 18 fields through object.__setattr__
        # (4 µs an item); the instance's __dict__ filled at once is the same object in 1 µs.
        item: Notification = _new(Notification)
        attributes = item.__dict__
        attributes.update(fields)
        attributes["read"] = not unread
        attributes["seen"] = seen
        attributes["actors"] = list(actors)
        attributes["payload"] = dict(flat) if flat is not None else json.loads(row.payload)
        # the reader's own triage state (the row's flags, set per user like read)
        attributes["archived"] = bool(row.flags & ARCHIVED)
        attributes["saved"] = bool(row.flags & SAVED)
        attributes["snoozed_until"] = (to_rfc3339(row.snoozed_until)
                                       if row.flags & SNOOZED and row.snoozed_until is not None
                                       else None)
        attributes["reason"] = reason_of(row.flags)  # the reader's own: kept on their row
        return item

    def _draw(self, row: InboxRow, info: GroupInfo | None, event_type: EventType, language: str
              ) -> Drawn:
        actors = info.actors if info else ([row.actor] if row.actor else [])
        count = info.count if info else 1
        others = min(max(len(actors) - 1, 0), OTHERS_CAP)
        payload = json.loads(row.payload)
        flat = dict(payload) if isinstance(payload, dict) and all(
            isinstance(v, _FLAT) for v in payload.values()) else None
        ctx = RenderContext(type=row.type, actor=row.actor, object=row.object,
                            payload=payload, actors=actors[:3], count=count,
                            others=others, event_id=str(row.event_id))
        rendered = render_all(event_type, ctx, language, self._origins,
                              payload_text=row.payload if isinstance(row.payload, str) else None)
        return ({"id": str(row.event_id), "type": row.type, "category": row.category,
                "section": row.section, "object": row.object, "actor": row.actor,
                "count": count, "others": others, "title": rendered.title,
                "body": rendered.body, "link": rendered.link, "html": rendered.html,
                "created_at": to_rfc3339(row.created_at), "read": False, "seen": False},
                tuple(actors[:3]), flat)

    def clear(self) -> None:
        with self._lock:
            self._drawn.clear()
            self._encoded.clear()
