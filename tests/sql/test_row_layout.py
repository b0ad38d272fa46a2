"""How the SQL store lays out rows the behaviour suite observes only through the ports: one
``read_markers`` row per (user, scope), moved in place; a job row's columns (JSON arguments, the
lease in ``grabbed_until`` as the claim's token, ``run_after`` after a failure)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from engines import enqueue, open_tidings, table_rows
from tidings.clock import FrozenClock
from tidings.engine import Tidings
from tidings.jobs.model import SECOND, JobSpec

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
