"""Back-filled (imported, old) events never hijack a live bundle: they join only groups whose
base is older than they are, and never take the base from a newer notification."""

from __future__ import annotations

import json

from tidings.clock import FrozenClock, parse_rfc3339, to_rfc3339
from tidings.engine import Tidings
from tidings.importer import import_lines

OLD = "2023-04-01T00:00:00Z"  # the frozen clock starts on 2023-11-14


def _link(t: Tidings, actor: str, created_at: str | None = None) -> None:
    """A page link to bob: live, or imported with an old ``created_at``; then fan-out."""
    event = {"type": "page-linked", "actor": actor, "object": "page:X", "recipients": ["bob"]}
    if created_at is None:
        t.publish(event)
    else:
        record = {"kind": "event", **event, "created_at": created_at,
                  "idempotency_key": f"{actor}:{created_at}"}
        assert import_lines(t, [json.dumps(record)]).errors == []
    t.run_jobs()


def _items(t: Tidings) -> list[tuple[str | None, str, int, list[str], bool]]:
    return [(n.actor, n.created_at, n.count, n.actors, n.read)
            for n in t.notifications("bob").items]


def test_an_old_event_does_not_join_or_redate_a_live_bundle(
        t: Tidings, clock: FrozenClock) -> None:
    _link(t, "ann")
    clock.advance(60)
    _link(t, "ben")
    (live,) = t.notifications("bob").items
    assert (live.count, live.actor) == (2, "ben")

    clock.advance(60)
    _link(t, "cat", OLD)

    first, second = t.notifications("bob").items
    assert (first.id, first.created_at, first.actor, first.actors, first.count, first.title) == (
        live.id, live.created_at, "ben", ["ben", "ann"], 2, live.title)
    assert (second.actor, second.created_at, second.count) == ("cat", OLD, 1)
    assert t.unread_count("bob").count == 2


def test_old_events_bundle_with_each_other_below_a_live_bundle(
        t: Tidings, clock: FrozenClock) -> None:
    _link(t, "ann")
    clock.advance(60)
    later = to_rfc3339(parse_rfc3339(OLD) + 3_600_000_000)
    _link(t, "cat", OLD)
    _link(t, "dan", later)

    assert _items(t) == [
        ("ann", _items(t)[0][1], 1, ["ann"], False),
        ("dan", later, 2, ["dan", "cat"], False),
    ]


def test_an_old_event_newer_than_an_unread_old_group_joins_it(t: Tidings) -> None:
    later = to_rfc3339(parse_rfc3339(OLD) + 3_600_000_000)
    _link(t, "cat", OLD)
    _link(t, "dan", later)
    assert _items(t) == [("dan", later, 2, ["dan", "cat"], False)]
