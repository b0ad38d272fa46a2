"""publish: the event and its fan-out job in one transaction; idempotency keys; bulk publish."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engines import event_ids, inbox_of, jobs_by_func, keys_of, open_tidings, snapshot
from tidings.domain.events import Event
from tidings.engine import Published, Tidings
from tidings.exceptions import IdempotencyConflict, InvalidInput


@pytest.fixture
def t(any_store_url: str) -> Iterator[Tidings]:
    with open_tidings(any_store_url) as tidings:
        yield tidings


def test_publish_stores_the_event_and_enqueues_its_fanout(t: Tidings) -> None:
    result = t.publish({"type": "mention", "actor": "alice", "object": "page:Rome",
                        "recipients": ["bob"], "payload": {"line": 3}})

    assert result.created is True
    assert result.status == "accepted"
    assert [str(i) for i in event_ids(t)] == [result.id]
    event = t.get_event(result.id)
    assert (event.type, event.actor, event.object) == ("mention", "alice", "page:Rome")
    assert event.payload == {"line": 3}
    assert event.recipients == ["bob"]
    assert t.queue.stats()["queued"] == 1
    (job,) = t.queue.claim(10)
    assert job.func == "fanout"
    assert job.args == {"event_id": int(result.id)}
    assert job.unique_key == f"fanout:{result.id}"
    assert job.priority == 2  # the type's priority
    t.queue.release(job)
    assert keys_of(t) == []  # nothing delivered before the job runs

    t.run_jobs()
    assert inbox_of(t, "bob") == [("mention", "alice", "page:Rome")]
    assert t.queue.stats()["queued"] == 0


def test_publish_accepts_an_event_object(t: Tidings) -> None:
    result = t.publish(Event(type="mention", actor="alice", recipients=["bob", "carol"]))
    t.run_jobs()

    assert t.get_event(result.id).recipients == ["bob", "carol"]
    assert inbox_of(t, "bob") == [("mention", "alice", None)]
    assert inbox_of(t, "carol") == [("mention", "alice", None)]


def test_event_and_job_are_one_transaction(t: Tidings, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: object, specs: object) -> None:
        raise RuntimeError("queue down")

    empty = snapshot(t)
    with t.store.read() as tx:
        queue_of_a_unit = type(tx.jobs)  # this store's JobQueue
    monkeypatch.setattr(queue_of_a_unit, "enqueue_many", broken)
    with pytest.raises(RuntimeError, match="queue down"):
        t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})

    assert event_ids(t) == []
    assert t.queue.stats()["queued"] == 0
    assert snapshot(t) == empty


def test_same_key_same_body_returns_the_first_event_and_creates_nothing(t: Tidings) -> None:
    event = {"type": "mention", "actor": "alice", "recipients": ["bob"],
             "payload": {"a": 1}, "idempotency_key": "mention:1"}
    first = t.publish(event)
    again = t.publish(dict(event))  # before the fan-out ran

    assert again == Published(first.id, created=False)
    assert jobs_by_func(t) == {"fanout": 1}

    t.run_jobs()
    third = t.publish(dict(event))  # after the fan-out ran
    t.run_jobs()

    assert third == Published(first.id, created=False)
    assert [str(i) for i in event_ids(t)] == [first.id]
    assert t.queue.stats()["queued"] == 0
    assert [(k.user_id, str(k.event_id)) for k in keys_of(t)] == [("bob", first.id)]
    assert inbox_of(t, "bob") == [("mention", "alice", None)]
    assert t.counters.delivered == 1


def test_same_key_different_body_is_a_conflict(t: Tidings) -> None:
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
               "idempotency_key": "k"})
    before = snapshot(t)

    with pytest.raises(IdempotencyConflict, match="'k'"):
        t.publish({"type": "mention", "actor": "alice", "recipients": ["carol"],
                   "idempotency_key": "k"})
    with pytest.raises(IdempotencyConflict):
        t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
                   "payload": {"x": 1}, "idempotency_key": "k"})

    assert snapshot(t) == before


def test_idempotency_keys_are_scoped(t: Tidings) -> None:
    """Two publishers (two server keys over HTTP) may use the same key: each gets its own
    event; within one scope the key still deduplicates, and a different body conflicts."""
    event = {"type": "mention", "actor": "alice", "recipients": ["bob"],
             "idempotency_key": "k"}
    library = t.publish(event)  # the library's default scope
    first = t.publish(event, idempotency_scope="shop")
    other = t.publish(event, idempotency_scope="forum")
    again = t.publish(event, idempotency_scope="shop")
    [many] = t.publish_many([event], idempotency_scope="forum")

    assert len({library.id, first.id, other.id}) == 3
    assert (first.created, other.created) == (True, True)
    assert (again.id, again.created) == (first.id, False)
    assert (many.id, many.created) == (other.id, False)
    assert t.publish(event) == Published(library.id, created=False)
    with pytest.raises(IdempotencyConflict):
        t.publish({**event, "recipients": ["carol"]}, idempotency_scope="shop")
    assert len(event_ids(t)) == 3
    t.run_jobs()
    assert len(inbox_of(t, "bob")) == 3


@pytest.mark.parametrize("scope", ["", "s" * 65, 7])
def test_an_idempotency_scope_must_be_a_short_string(t: Tidings, scope: object) -> None:
    with pytest.raises(InvalidInput) as bad:
        t.publish({"type": "mention", "recipients": ["bob"]},
                  idempotency_scope=scope)  # type: ignore[arg-type]
    assert bad.value.field == "idempotency_scope"
    assert event_ids(t) == []


def test_events_without_a_key_are_never_deduplicated(t: Tidings) -> None:
    event = {"type": "mention", "actor": "alice", "recipients": ["bob"]}
    first, second = t.publish(event), t.publish(event)
    t.run_jobs()

    assert first.id != second.id
    assert first.created and second.created
    assert inbox_of(t, "bob") == [("mention", "alice", None)] * 2


def test_publish_many_creates_every_event_in_order(t: Tidings) -> None:
    results = t.publish_many([
        {"type": "mention", "actor": "alice", "recipients": ["bob"], "object": "page:A"},
        {"type": "mention", "actor": "carol", "recipients": ["bob"], "object": "page:B"},
        Event(type="message", actor="dave", object="talk:bob", recipients=["bob"]),
    ])

    assert [r.created for r in results] == [True, True, True]
    assert [int(r.id) for r in results] == sorted(int(r.id) for r in results)
    assert jobs_by_func(t) == {"fanout": 3}
    t.run_jobs()
    assert inbox_of(t, "bob") == [
        ("message", "dave", "talk:bob"),
        ("mention", "carol", "page:B"),
        ("mention", "alice", "page:A"),
    ]


def test_each_id_publish_many_returns_is_its_own_events(t: Tidings) -> None:
    """The ids come back in the batch's order, whatever the batch's size (on PostgreSQL one
    insert of column arrays whose ids are taken in the rows' order)."""
    for size in (1, 2, 40):
        batch = [{"type": "mention", "actor": f"a{i}", "recipients": ["bob"],
                  "object": f"page:{size}-{i}", **({"idempotency_key": f"k{size}-{i}"}
                                                     if i % 3 else {})}
                 for i in range(size)]
        results = t.publish_many(batch)
        assert [(t.get_event(r.id).actor, t.get_event(r.id).object) for r in results] == [
            (b["actor"], b["object"]) for b in batch]


def test_publish_many_mixes_new_and_replayed_events(t: Tidings) -> None:
    first = t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
                       "idempotency_key": "one"})

    results = t.publish_many([
        {"type": "mention", "actor": "alice", "recipients": ["bob"], "idempotency_key": "one"},
        {"type": "mention", "actor": "alice", "recipients": ["bob"], "idempotency_key": "two"},
    ])

    assert results[0] == Published(first.id, created=False)
    assert results[1].created is True
    assert [str(i) for i in event_ids(t)] == [first.id, results[1].id]
    assert jobs_by_func(t) == {"fanout": 2}


def test_publish_many_is_all_or_nothing(t: Tidings) -> None:
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
               "idempotency_key": "taken"})
    before = snapshot(t)

    with pytest.raises(IdempotencyConflict):
        t.publish_many([
            {"type": "mention", "actor": "alice", "recipients": ["bob"]},
            {"type": "mention", "actor": "eve", "recipients": ["bob"], "idempotency_key": "taken"},
        ])
    with pytest.raises(InvalidInput) as repeated:
        t.publish_many([
            {"type": "mention", "recipients": ["bob"], "idempotency_key": "dup"},
            {"type": "mention", "recipients": ["bob"], "idempotency_key": "dup"},
        ])

    assert repeated.value.field == "idempotency_key"
    assert snapshot(t) == before
