"""Group commit: the events of concurrent publishes share one transaction, each answered on
its own (``Tidings.publish_each``, ``tidings.api.groupcommit``), on every store, and over
real HTTP with many requests at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from engines import event_ids, inbox_of, open_tidings
from servers import LiveServer
from tidings.api.groupcommit import GroupCommit, publish_group
from tidings.engine import Published, Tidings
from tidings.exceptions import (
    IdempotencyConflict,
    StoreRejected,
    TidingsError,
    UnknownEventType,
)

pytest_plugins = ["servers"]


@pytest.fixture
def t(any_store_url: str) -> Iterator[Tidings]:
    with open_tidings(any_store_url) as tidings:
        yield tidings


def mention(actor: str, to: str, key: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "mention", "actor": actor, "recipients": [to]}
    if key is not None:
        event["idempotency_key"] = key
    return event


def test_each_item_is_answered_as_if_published_alone_in_turn(t: Tidings) -> None:
    earlier = t.publish(mention("zoe", "bob", "k-before"))
    outcomes = t.publish_each([
        (mention("alice", "bob"), "default"),
        ({"type": "no-such-type", "recipients": ["bob"]}, "default"),
        (mention("carol", "bob", "k1"), "default"),
        (mention("carol", "bob", "k1"), "default"),          # the same key and body again
        (mention("dave", "bob", "k1"), "default"),           # the same key, another body
        (mention("zoe", "bob", "k-before"), "default"),      # stored before, same body
        (mention("erin", "bob", "k-before"), "default"),     # stored before, another body
        (mention("frank", "bob", "k1"), "other-scope"),      # the key in another scope
    ])

    assert len(outcomes) == 8
    fresh, unknown, first, repeat, clash, before, clash_before, scoped = outcomes
    assert isinstance(fresh, Published) and fresh.created
    assert isinstance(unknown, UnknownEventType)
    assert isinstance(first, Published) and first.created
    assert repeat == Published(first.id, created=False)
    assert isinstance(clash, IdempotencyConflict)
    assert before == Published(earlier.id, created=False)
    assert isinstance(clash_before, IdempotencyConflict)
    assert isinstance(scoped, Published) and scoped.created and scoped.id != first.id

    stored = {str(i) for i in event_ids(t)}
    assert stored == {earlier.id, fresh.id, first.id, scoped.id}
    t.run_jobs()
    assert sorted(inbox_of(t, "bob")) == sorted(
        [("mention", a, None) for a in ("zoe", "alice", "carol", "frank")])


def test_a_refused_item_refuses_nothing_else_and_publish_many_stays_all_or_none(
        t: Tidings) -> None:
    t.publish(mention("zoe", "bob", "taken"))
    (conflict, accepted) = t.publish_each([(mention("erin", "bob", "taken"), "default"),
                                           (mention("amy", "bob"), "default")])
    assert isinstance(conflict, IdempotencyConflict)
    assert isinstance(accepted, Published) and accepted.created

    before = set(event_ids(t))
    with pytest.raises(IdempotencyConflict):
        t.publish_many([mention("amy", "carol"), mention("erin", "bob", "taken")])
    assert set(event_ids(t)) == before


def test_concurrent_publishes_share_one_transaction(t: Tidings) -> None:
    groups: list[int] = []
    commit_group = t.publishing.commit_group

    async def counted(items: Any, traces: Any = None) -> list[Published | TidingsError]:
        groups.append(len(items))
        return await commit_group(items, traces)

    t.publishing.commit_group = counted  # type: ignore[method-assign]
    commits = GroupCommit(t)

    async def publish_all() -> list[Any]:
        return await asyncio.gather(
            *(commits.publish(mention(f"user{i}", "bob", f"key{i % 15}"), "default")
              for i in range(20)),
            commits.publish({"type": "no-such-type", "recipients": ["bob"]}, "default"),
            return_exceptions=True)

    *published, refused = asyncio.run(publish_all())

    assert groups == [21]  # every request arrived before the first commit began
    assert isinstance(refused, UnknownEventType)
    answers = [p for p in published if isinstance(p, Published)]
    conflicts = [p for p in published if isinstance(p, IdempotencyConflict)]
    assert len(answers) == 15 and len(conflicts) == 5  # key{i} reused with another actor
    assert len(event_ids(t)) == 15


def test_a_request_after_every_committer_ended_starts_one_of_its_own(t: Tidings) -> None:
    """A committer whose task has ended leaves the set only when the loop runs its done
    callback, later. A request arriving in between must still get a committer: counted as
    busy, the ended one had left it waiting for ever, its event never published."""
    commits = GroupCommit(t, in_flight=1)

    async def publish_after_an_ended_committer() -> Published:
        ended = asyncio.create_task(asyncio.sleep(0))
        await ended
        commits._committers.add(ended)  # ended, its discard not run yet
        return await asyncio.wait_for(
            commits.publish(mention("ann", "bob", "after-ended"), "default"), 10)

    published = asyncio.run(publish_after_an_ended_committer())
    assert published.created and event_ids(t) == [int(published.id)]


def test_many_concurrent_posts_over_http_are_each_answered(live: LiveServer) -> None:
    events = [mention(f"user{i}", "bob", f"http-key-{i % 40}") for i in range(60)]
    events += [dict(events[0])] * 5  # the same key and body: the first event again

    def post(event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with live.http() as http:
            response = http.post("/v1/events", json=event)
            return response.status_code, response.json()

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(post, events))

    by_key: dict[str, set[str]] = {}
    statuses: dict[int, int] = {}
    for event, (status, body) in zip(events, answers, strict=True):
        statuses[status] = statuses.get(status, 0) + 1
        if status == 202:
            by_key.setdefault(event["idempotency_key"], set()).add(body["id"])
        else:
            assert (status, body["error"]["code"]) == (409, "idempotency_conflict")
    # Each key is stored once; which of its bodies came first depends on arrival order, so
    # the others are 409, and every 202 of a key names the same event.
    assert set(by_key) == {f"http-key-{i}" for i in range(40)}
    assert all(len(ids) == 1 for ids in by_key.values())
    assert statuses[202] in (40, 45) and statuses[202] + statuses.get(409, 0) == 65
    assert live.settled()
    assert len(event_ids(live.tidings)) == 40
    with live.client() as server:
        assert server.unread_count(user="bob")["count"] == 40


@pytest.mark.parametrize("any_backend", ["sqlite"])
def test_a_group_refused_as_a_whole_is_published_one_by_one(t: Tidings) -> None:
    """A store that refuses the group's transaction (say one row it cannot hold) refuses that
    event alone: the group is published again one event at a time."""
    publish_each = t.publish_each

    def picky(items: Any, traces: Any = None) -> list[Published | TidingsError]:
        if any(event["actor"] == "mallory" for event, _ in items):
            raise StoreRejected("the store refused a row")
        return publish_each(items, traces)

    t.publish_each = picky  # type: ignore[method-assign]
    outcomes = publish_group(t, [(mention("amy", "bob"), "default"),
                                 (mention("mallory", "bob"), "default"),
                                 (mention("carol", "bob"), "default")])

    assert [type(o) for o in outcomes] == [Published, StoreRejected, Published]
    assert len(event_ids(t)) == 2
