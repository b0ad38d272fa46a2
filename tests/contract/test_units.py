"""Store: units of work commit together or not at all; reads see what was committed."""

from __future__ import annotations

import pytest
from contract_kit import EVERYTHING, deliver, note, page, publish, read, write

from store_registry import OWN_INBOX_WRITES
from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.events import Event
from tidings.exceptions import StoreConflict
from tidings.jobs.model import JobSpec


def test_transact_returns_what_the_work_returns(store: ports.Store) -> None:
    assert write(store, lambda tx: 42) == 42


def test_one_failed_unit_undoes_every_port(store: ports.Store, clock: FrozenClock) -> None:
    kept = publish(store, clock.now_us())

    def work(tx: ports.Tx) -> None:
        event = tx.events.insert(Event(type="comment", idempotency_key="k"), "{}",
                                 clock.now_us())
        tx.inbox.insert([note("ann", event, 1), note("ann", kept, 1)])
        tx.graph.add_user("ann", clock.now_us())
        tx.graph.save_subscription("ann", "*", "*", ["web"], clock.now_us())
        tx.timeline.push(kept, ["ann"], clock.now_us())
        tx.settings.save_preferences("ann", {"a": 1}, clock.now_us())
        tx.jobs.enqueue_many([JobSpec("fanout", {"event": event}, unique_key="f")])
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError, match="the unit fails"):
        write(store, work)
    assert read(store, lambda tx: tx.events.get_by_key("k")) is None
    assert page(store, "ann") == []
    assert write(store, lambda tx: tx.graph.add_user("ann", clock.now_us())) is True
    assert read(store, lambda tx: tx.graph.subscriptions("ann", after_id=0, limit=10)) == []
    assert read(store, lambda tx: tx.timeline.page("ann", limit=10, before=None)) == []
    assert read(store, lambda tx: tx.settings.preferences("ann")) is None
    assert store.queue.stats()["queued"] == 0


def test_a_committed_unit_is_seen_by_the_next(store: ports.Store, clock: FrozenClock) -> None:
    def work(tx: ports.Tx) -> int:
        event = tx.events.insert(Event(type="comment", actor="ann"), "{}", clock.now_us())
        tx.inbox.insert([note("ann", event, 1)])
        tx.jobs.enqueue_many([JobSpec("fanout", {"event": event})])
        return event

    event = write(store, work)
    assert [r.event_id for r in page(store, "ann")] == [event]
    assert [j.args for j in store.queue.claim(5)] == [{"event": event}]


@pytest.mark.needs(OWN_INBOX_WRITES)
def test_a_unit_reads_its_own_inbox_writes(store: ports.Store, clock: FrozenClock) -> None:
    def work(tx: ports.Tx) -> set[str]:
        event = tx.events.insert(Event(type="comment", actor="ann"), "{}", clock.now_us())
        tx.inbox.insert([note("ann", event, 1)])
        return tx.inbox.delivered(event, ["ann"])

    assert write(store, work) == {"ann"}


def test_a_read_unit_sees_every_port(store: ports.Store, clock: FrozenClock) -> None:
    events = [publish(store, clock.now_us()) for _ in range(3)]
    deliver(store, [note("ann", e, 1) for e in events])
    with store.read() as tx:
        assert len(tx.inbox.page("ann", EVERYTHING, tx.inbox.load_markers("ann"), limit=10,
                                 before=None)) == 3
        assert tx.events.get(events[0]) is not None


def test_lifecycle(store: ports.Store) -> None:
    assert isinstance(store.backend, str) and store.backend
    store.ping()
    store.check_schema()
    store.migrate()  # already current: nothing to do
    store.check_schema()


def test_a_conflicting_write_rolls_its_unit_back(store: ports.Store, clock: FrozenClock) -> None:
    publish(store, clock.now_us(), key="k")

    def work(tx: ports.Tx) -> None:
        tx.graph.save_subscription("ann", "*", "*", ["web"], clock.now_us())
        tx.events.insert(Event(type="comment", idempotency_key="k"), "{}", clock.now_us())

    with pytest.raises(StoreConflict):
        write(store, work)
    assert read(store, lambda tx: tx.graph.subscriptions("ann", after_id=0, limit=10)) == []


def test_after_commit_runs_once_the_unit_committed(store: ports.Store,
                                                   clock: FrozenClock) -> None:
    seen: list[object] = []

    def work(tx: ports.Tx) -> None:
        tx.graph.add_user("ann", clock.now_us())
        tx.after_commit(lambda: seen.append("first"))
        tx.after_commit(lambda: seen.append("second"))
        assert seen == []  # not while the unit runs

    write(store, work)
    assert seen == ["first", "second"]
    # committed: registering ann again is no longer new
    assert write(store, lambda tx: tx.graph.add_user("ann", clock.now_us())) is False


def test_after_commit_never_runs_for_a_unit_that_rolled_back(store: ports.Store) -> None:
    seen: list[str] = []

    def work(tx: ports.Tx) -> None:
        tx.after_commit(lambda: seen.append("ran"))
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError):
        write(store, work)
    assert seen == []


def test_a_failing_after_commit_callback_does_not_undo_the_unit(store: ports.Store,
                                                               clock: FrozenClock) -> None:
    def boom() -> None:
        raise ValueError("a listener broke")

    def work(tx: ports.Tx) -> bool:
        tx.after_commit(boom)
        return tx.graph.add_user("ann", clock.now_us())

    assert write(store, work) is True
    assert write(store, lambda tx: tx.graph.add_user("ann", clock.now_us())) is False
