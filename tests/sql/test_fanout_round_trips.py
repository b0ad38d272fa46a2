"""Publishing a batch and fanning a batch of events out take a bounded number of statements,
whatever the number of events: the events, keys and jobs of a ``publish_many`` in one insert
each, and the fan-out jobs of one claim in one unit with per-batch reads and writes
(``tidings.fanout.batch``). Counted with SQLAlchemy's events, not timed."""

from __future__ import annotations

from statements import statements
from tidings.domain.types import EventType
from tidings.engine import Tidings

FOLLOWERS = ("u0", "u1", "u2")
# timelines only, as the timelines bench's posts: no inbox row, no mail
STATUS = EventType("status", category="status", channels=(), audience=("actor_followers",))


def _posts(count: int, first: int = 0) -> list[dict[str, object]]:
    return [{"type": "status", "actor": f"a{n:03d}", "object": f"page:{n}",
             "idempotency_key": f"k{n}"} for n in range(first, first + count)]


def _follow(t: Tidings, count: int) -> None:
    for n in range(count):
        for user in FOLLOWERS:
            t.follow(user, f"a{n:03d}")


def test_publish_many_is_a_few_statements_for_any_number_of_events(t: Tidings) -> None:
    t.define_type(STATUS)
    counts = []
    for size, first in ((5, 0), (40, 5)):
        with statements(t) as seen:
            published = t.publish_many(_posts(size, first))
        assert len(published) == size and all(p.created for p in published)
        counts.append(len(seen))
    if t.store.backend == "sqlite":
        # no ordered RETURNING of an executemany in SQLAlchemy's SQLite dialect: an insert
        # per event there (in-process, no round trip), the rest as elsewhere
        assert counts[1] - counts[0] == 35
    else:
        assert counts[0] == counts[1] <= 4  # BEGIN, keys looked up, events, jobs
    with statements(t) as seen:  # the same keys again: one read, nothing written
        again = t.publish_many(_posts(40, 5))
    assert [p.id for p in again] == [p.id for p in published]
    assert not any(p.created for p in again)
    assert len(seen) <= 3


def test_a_batch_of_fanouts_is_a_few_statements_for_any_number_of_events(t: Tidings) -> None:
    t.define_type(STATUS)
    _follow(t, 45)
    counts = []
    for size, first in ((5, 0), (40, 5)):
        t.publish_many(_posts(size, first))
        with statements(t) as seen:
            assert t.run_jobs() == size
        counts.append(len(seen))
    # claims; events, followers, mutes, preferences, sources, the timeline push and cap, the
    # jobs' deletion: the same for 40 events as for 5
    assert counts[0] == counts[1] <= 20  # two claims (the first job, then its batch), BEGINs
    for n in range(45):
        assert [e.actor for e in t.timeline("u1", limit=100).items].count(f"a{n:03d}") == 1


def dictionary(seen: list[str]) -> list[str]:
    """The statements of ``seen`` that look a type up in the types dictionary or add it (the
    read of its row by name, the insert, the read again)."""
    return [s for s in seen if (s.lstrip().startswith("INSERT") and "inbox_types" in s)
            or "FROM inbox_types \nWHERE inbox_types.name" in s]


# inbox rows that never bundle, as the fan-out bench's posts: mail and webhooks on
POST = EventType("post", category="post", audience=("actor_followers",))


def test_a_batch_of_inbox_fanouts_is_a_few_statements_for_any_number_of_events(
        t: Tidings) -> None:
    """Events of a type that never bundles: who holds any of them read once, their rows
    written and their users registered once, for the whole batch; nothing is written to a
    registered user's row (no count per user: the inbox cap checks about one delivery in a
    margin, reading the rows)."""
    t.define_type(POST)
    _follow(t, 45)
    counts, added = [], []
    for size, first in ((5, 0), (40, 5)):
        t.publish_many([{**p, "type": "post"} for p in _posts(size, first)])
        with statements(t) as seen:
            assert t.run_jobs() == size
        counts.append(len(seen) - len(dictionary(seen)))
        added.append(len(dictionary(seen)))
        assert not [s for s in seen if "UPDATE users" in s.replace("`", "")
                    or ("INTO users" in s.replace("`", "") and "UPDATE" in s)], seen
    assert counts[0] == counts[1] <= 24, counts
    assert added == [3, 0], added  # the type's first delivery adds it: its id known after
    for user in FOLLOWERS:
        assert t.unread_count(user).count == 45
        assert len(t.notifications(user, limit=50).items) == 45


# a bundled type, as a "like": its rows join the newest unread group of their object
LIKED = EventType("liked", category="liked", bundle="object", audience=("recipients",))


def test_a_batch_of_bundled_fanouts_is_a_few_statements_for_any_number_of_events(
        t: Tidings) -> None:
    """Likes of distinct posts: the (user, bundle) pairs locked and their bases read at once,
    the rows written in one wave; a second round's likes of the same posts join the groups
    the first started, in as many statements."""
    t.define_type(LIKED)
    counts, added = [], []
    for size in (5, 40):
        for round_ in range(2):
            t.publish_many([{"type": "liked", "actor": f"fan{round_}", "object": f"post:{size}:{n}",
                             "recipients": list(FOLLOWERS)} for n in range(size)])
            with statements(t) as seen:
                assert t.run_jobs() == size
            counts.append(len(seen) - len(dictionary(seen)))
            added.append(len(dictionary(seen)))
    assert counts[0] == counts[2] and counts[1] == counts[3] and max(counts) <= 30, counts
    assert added == [3, 0, 0, 0], added
    for user in FOLLOWERS:
        items = t.notifications(user, limit=100).items
        assert len(items) == 45 and {i.count for i in items} == {2}
        assert t.unread_count(user).count == 45


# an object's watchers, as the demo's page links: bundled by page
LINKED = EventType("linked", category="linked", bundle="object",
                   audience=("object_subscribers",))


def test_a_batch_of_object_subscriber_fanouts_reads_little_per_event(t: Tidings) -> None:
    """Events reaching their object's subscribers join the batch: per event only the read of
    those subscribers and of their subscriptions' channels; the rest once for the batch."""
    t.define_type(LINKED)
    for n in range(45):
        for user in FOLLOWERS:
            t.subscribe(user, "linked", f"page:{n}")
    counts = []
    for size, first in ((5, 0), (40, 5)):
        t.publish_many([{"type": "linked", "actor": "ann", "object": f"page:{n}"}
                        for n in range(first, first + size)])
        with statements(t) as seen:
            assert t.run_jobs() == size
        counts.append(len(seen))
    assert counts[1] - counts[0] <= 2 * 35, counts
    for user in FOLLOWERS:
        assert t.unread_count(user).count == 45
