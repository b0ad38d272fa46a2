"""A subscription may have a lifetime (LiveJournal ESN's subscriptions do): once its
``expires_at`` has passed it no longer matches in fan-out, on every store, whether the
audience is delivered at once or in chunks, and it no longer routes channels."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contract import error_of
from engines import open_tidings, recipients_of
from servers import LiveServer
from tidings.clock import FrozenClock, from_datetime, parse_rfc3339
from tidings.exceptions import InvalidInput

pytest_plugins = ["servers"]

MINUTE = 60_000_000  # µs


def test_an_expired_subscription_no_longer_matches(any_store_url: str,
                                                   clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock) as t:
        now = clock.now_us()
        short = t.subscribe("bob", "page-linked", "page:Rome", expires_at=now + MINUTE)
        t.subscribe("carol", "page-linked", "*", expires_at=now + 10 * MINUTE)
        t.subscribe("dave", "*", "page:Rome")  # no expiry
        assert short.expires_at == now + MINUTE
        assert [s.expires_at for s in t.subscriptions("bob").items] == [now + MINUTE]

        before = t.publish({"type": "page-linked", "actor": "alice", "object": "page:Rome"})
        t.run_jobs()
        clock.advance(seconds=61)
        after = t.publish({"type": "page-linked", "actor": "alice", "object": "page:Rome"})
        t.run_jobs()

        assert recipients_of(t, before.id) == ["bob", "carol", "dave"]
        assert recipients_of(t, after.id) == ["carol", "dave"]
        assert [s.id for s in t.subscriptions("bob").items] == [short.id]  # listed, unmatched


def test_expiry_holds_in_chunked_fan_out(any_store_url: str, clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock, chunk_size=2) as t:
        now = clock.now_us()
        for user in ("u1", "u2", "u3", "u4", "u5"):
            t.subscribe(user, "page-linked", "page:Rome",
                        expires_at=now + MINUTE if user in ("u2", "u4") else None)
        clock.advance(seconds=120)

        event = t.publish({"type": "page-linked", "actor": "alice", "object": "page:Rome"})
        t.run_jobs()

        assert recipients_of(t, event.id) == ["u1", "u3", "u5"]


def test_subscribing_again_replaces_the_lifetime(any_store_url: str,
                                                 clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock) as t:
        now = clock.now_us()
        first = t.subscribe("bob", "page-linked", "page:Rome", expires_at=now + MINUTE)
        again = t.subscribe("bob", "page-linked", "page:Rome")  # for good now
        clock.advance(seconds=120)
        event = t.publish({"type": "page-linked", "actor": "alice", "object": "page:Rome"})
        t.run_jobs()

        assert again.id == first.id and again.expires_at is None
        assert recipients_of(t, event.id) == ["bob"]


def test_a_lifetime_that_has_already_ended_is_refused(any_store_url: str,
                                                      clock: FrozenClock) -> None:
    with open_tidings(any_store_url, clock=clock) as t:
        with pytest.raises(InvalidInput, match="expires_at") as refused:
            t.subscribe("bob", "page-linked", "page:Rome", expires_at=clock.now_us())
        assert refused.value.field == "expires_at"
        assert t.subscriptions("bob").items == []


def test_a_lifetime_over_http_and_the_client(live: LiveServer) -> None:
    soon = datetime.now(UTC) + timedelta(hours=1)
    with live.client() as server:
        sid = server.add_subscription(user="bob", type="page-linked", object="page:Rome",
                                      expires_at=soon)
        forever = server.add_subscription(user="bob", type="*", object="page:Paris")
        listed = server.subscriptions(user="bob")["items"]
    with live.http() as http:
        past = http.post("/v1/users/bob/subscriptions", json={
            "type": "page-linked", "expires_at": "2001-01-01T00:00:00Z"})
        naive = http.post("/v1/users/bob/subscriptions", json={
            "type": "page-linked", "expires_at": "2031-01-01T00:00:00"})

    by_id = {s["id"]: s for s in listed}
    assert parse_rfc3339(by_id[sid]["expires_at"]) == from_datetime(soon)
    assert by_id[forever]["expires_at"] is None
    assert past.status_code == 422 and [d["field"] for d in error_of(past)["details"]] == [
        "expires_at"]
    assert naive.status_code == 422, naive.text
