"""How the SQL store lays out rows the behaviour suite observes only through the ports: one
``read_markers`` row per (user, scope), moved in place; a job row's columns (JSON arguments, the
lease in ``grabbed_until`` as the claim's token, ``run_after`` after a failure); the delivery
records of who received each event."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from engines import enqueue, open_tidings, table_rows
from tidings.clock import FrozenClock
from tidings.domain.views import NewNotification
from tidings.engine import Tidings
from tidings.jobs.model import SECOND, JobSpec
from tidings.store.sql.core import recipients

BACKOFF = 2.0


@pytest.fixture
def t(store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    with open_tidings(store_url, clock=clock, job_backoff_seconds=BACKOFF) as tidings:
        yield tidings


def _markers(t: Tidings) -> list[tuple[str, str]]:
    return [(m["user_id"], m["scope"]) for m in table_rows(t, "read_markers")]


def test_a_watermark_is_one_row_per_user_and_scope_moved_in_place(t: Tidings) -> None:
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
    t.run_jobs()
    notifications = table_rows(t, "notifications")

    t.mark_all_read("bob")
    (first,) = table_rows(t, "read_markers")
    t.mark_all_read("bob")
    t.mark_all_read("bob", types=["mention"])
    t.mark_seen("bob")

    assert _markers(t) == [("bob", "all"), ("bob", "seen"), ("bob", "type:mention")]
    (moved,) = [m for m in table_rows(t, "read_markers") if m["scope"] == "all"]
    assert moved["until_at"] > first["until_at"]
    assert table_rows(t, "notifications") == notifications  # no notification row written


def test_a_job_row_holds_its_spec_as_json_and_its_lease_as_the_token(t: Tidings) -> None:
    published = t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})

    (row,) = table_rows(t, "jobs")
    assert (row["func"], row["unique_key"], row["priority"]) == (
        "fanout", f"fanout:{published.id}", 2)
    assert row["args"] == json.dumps({"event_id": int(published.id)}, separators=(",", ":"))
    assert (row["grabbed_until"], row["attempts"]) == (0, 0)

    (job,) = t.queue.claim(1)
    (row,) = table_rows(t, "jobs")
    assert (row["grabbed_until"], row["attempts"]) == (job.token, 1)


def test_a_failed_job_row_is_unleased_and_waits_for_its_backoff(t: Tidings) -> None:
    enqueue(t, JobSpec("nobody-handles-this", {"n": 1}))

    t.run_jobs()

    (failure,) = t.queue.failures()
    (row,) = table_rows(t, "jobs")
    assert row["grabbed_until"] == 0
    # full jitter: anywhere in the first attempt's window, never before the failure
    assert 0 <= row["run_after"] - failure.failed_at <= int(BACKOFF * SECOND)
    (logged,) = table_rows(t, "job_failures")
    assert json.loads(logged["args"]) == {"n": 1}


def test_a_row_that_starts_its_group_is_stored_as_not_joined(t: Tidings) -> None:
    # a page reads the members of joined groups only: a row stored as joined=False must be
    # its group alone, and one that joined another's group must say so
    def link(actor: str) -> int:
        event = t.publish({"type": "page-linked", "actor": actor, "object": "page:Rome",
                           "recipients": ["bob"]})
        t.run_jobs()
        return int(event.id)

    def flags() -> dict[int, tuple[bool, bool]]:
        return {r["event_id"]: (bool(r["bundle_base"]), bool(r["joined"]))
                for r in table_rows(t, "notifications")}

    first = link("alice")
    second = link("carol")
    mention = int(t.publish({"type": "mention", "actor": "dave", "recipients": ["bob"]}).id)
    t.run_jobs()
    assert flags() == {first: (False, False), second: (True, True), mention: (True, False)}
    (_, linked) = t.notifications("bob").items  # the mention is newer
    assert linked.count == 2

    t.mark_all_read("bob")
    third = link("erin")  # the group was read: a new one starts
    assert flags()[third] == (True, False)
    assert t.notifications("bob").items[0].count == 1


def _note(user: str, event: int) -> NewNotification:
    return NewNotification(user, event, 9, "mention", "general", "alert", "alice", None,
                           "0" * 16, "0" * 16)


def _records(t: Tidings) -> dict[int, list[list[str]]]:
    """Each event's delivery records: the users of each, in key order."""
    found: dict[int, list[list[str]]] = {}
    for row in table_rows(t, "deliveries"):
        users = recipients.decode(row["users"])
        assert row["chunk"] == recipients.chunk_key(users[0])
        found.setdefault(row["event_id"], []).append(users)
    return found


def test_a_delivery_records_its_users_with_its_rows_and_no_more(t: Tidings) -> None:
    """One record per event and insert (at most PART users, sorted), written in the rows'
    unit: a unit that fails leaves neither; a retraction takes the event's records with its
    last rows."""
    team = [f"u{n:04d}" for n in range(recipients.PART + 5)]
    big = int(t.publish({"type": "mention", "actor": "alice", "recipients": ["ann"]}).id)
    small = int(t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]}).id)
    t.run_jobs()
    t.store.transact(lambda tx: tx.inbox.insert([  # one insert of more than PART users
        _note(u, big) for u in reversed(team) if u != "ann"]))
    team = sorted([*team, "ann"])
    records = _records(t)
    assert sorted(len(users) for users in records[big]) == [1, 5, recipients.PART]
    assert sorted(u for users in records[big] for u in users) == team
    assert records[small] == [["bob"]]
    assert all(users == sorted(users) for users in records[big])

    def fails(tx: Any) -> None:
        tx.inbox.insert([_note("carol", small)])
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError):
        t.store.transact(fails)
    assert _records(t)[small] == [["bob"]]
    assert [r["user_id"] for r in table_rows(t, "notifications") if r["event_id"] == small
            ] == ["bob"]

    t.retract(event_id=str(small))
    assert small not in _records(t) and big in _records(t)


def test_a_user_delivered_again_joins_the_record_of_the_same_key(t: Tidings) -> None:
    """A recipient who deleted their notification holds the event no more, so a later
    delivery of it (a back-fill) writes them again: its record, keyed by the same first
    user, is merged into the one there, which keeps every user once."""
    event = int(t.publish({"type": "mention", "actor": "alice",
                           "recipients": ["bob", "carol"]}).id)
    t.run_jobs()
    t.delete_notification("bob", event)
    assert _records(t) == {event: [["bob", "carol"]]}  # a recipient's deletion keeps it
    with t.store.read() as tx:
        assert tx.inbox.delivered(event, ["bob", "carol", "dave"]) == {"carol"}

    def again(tx: Any) -> None:
        tx.inbox.insert([_note(u, event) for u in ("bob", "dave")])

    t.store.transact(again)
    assert _records(t) == {event: [["bob", "carol", "dave"]]}
    with t.store.read() as tx:
        assert tx.inbox.delivered(event, ["bob", "carol", "dave"]) == {"bob", "carol", "dave"}
        assert sorted(k.user_id for k in tx.inbox.keys_for_events([event])) == [
            "bob", "carol", "dave"]
