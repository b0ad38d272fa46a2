"""Script arguments of the Redis inbox: a query (``tidings.domain.views.Filters`` with the
watermarks) as ``page.lua`` / ``count.lua`` take it, queryable fields as ``deliver.lua`` /
``insert.lua`` take them, and the watermarks hash read back."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from tidings.domain.flags import STATES, reason_code
from tidings.domain.readstate import Markers
from tidings.domain.views import Filters


def query(filters: Filters, markers: Markers, **extra: Any) -> str:
    """A query for ``page.lua`` / ``count.lua`` as JSON (absent values left out)."""
    data: dict[str, Any] = {
        "types": list(filters.types) if filters.types else None,
        "category": filters.category, "section": filters.section, "unread": filters.unread,
        "actor": filters.actor, "object": filters.object, "max_id": filters.max_id,
        "since_id": filters.since_id, "all": markers.all,
        "fields": [list(f) for f in filters.fields] or None,
        # the reasons' codes in a row's flags (bits 4-6: tidings.domain.flags)
        "reasons": ([reason_code(r) for r in filters.reasons] or [-1]
                    if filters.reasons is not None else None),
        "scoped": [[kind, value, until] for (kind, value), until in markers.scoped.items()],
        "position": list(markers.position) if markers.position else None,
        # the state's bits: those a row must have, those it must not (0: no condition)
        "having": STATES[filters.state][0] or None if filters.state else None,
        "lacking": STATES[filters.state][1] or None if filters.state else None,
        **extra}
    return json.dumps({k: v for k, v in data.items() if v is not None})


@functools.lru_cache(maxsize=256)
def own_count_query(filters: Filters, unseen: bool, cap: int) -> str:
    """``count.lua``'s query when the script reads the watermarks itself: the same text for
    every user, so it is made once per filter (a badge asks the same one each time)."""
    return query(filters, Markers(), unread=None, cap=cap, own_markers=True,
                 unseen=unseen or None)


def fields_arg(fields: Sequence[tuple[str, str]]) -> str:
    """Queryable payload fields as a script argument: a JSON object, '' for none."""
    return json.dumps(dict(fields)) if fields else ""


def markers_of(raw: dict[str, str]) -> Markers:
    place = raw.get(PLACE)
    position = tuple(int(x) for x in place.split(":")) if place else None
    return Markers.from_rows({scope: int(until) for scope, until in raw.items()
                              if scope != PLACE},
                             (position[0], position[1]) if position else None)


PLACE = "position_place"  # the read-up-to mark's place, "created:id", beside its 'position'


def place_of(raw: str | None) -> tuple[int, int] | None:
    if not raw:
        return None
    created, event_id = raw.split(":")
    return int(created), int(event_id)
