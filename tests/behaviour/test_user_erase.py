"""A person's erasure (``DELETE /v1/users/{user}``, GDPR Art. 17) on every store, through a
real server on loopback: once its job has run, the user's name is nowhere in the store — no
table's text or blob column (the delivery records unpacked), no Redis key's name or value,
no memory table — the inboxes and timelines they reached no longer show their events, and
everyone else's data is as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from engines import TYPES, open_tidings, stored_texts
from pushservice import b64url
from servers import SERVER_KEY, TOKEN_SECRET, LiveServer, serve
from smtp import SmtpSink
from tidings.api.app import create_app
from tidings.client import Client
from tidings.clock import FrozenClock
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.wiring import hot_store


def _phone() -> dict[str, Any]:
    """A browser's ``PushSubscription`` JSON with keys of its own, at a public address."""
    point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"endpoint": "https://93.184.216.34/push/bob",
            "keys": {"p256dh": b64url(point), "auth": b64url(b"0123456789abcdef")}}


REPLY = EventType("reply", channels=("web", "email"), audience=("recipients",),
                  templates=Templates(title="{{ actor }} replied"))


def _naming(t: Tidings, name: str) -> list[tuple[str, str]]:
    return [(where, text[:200]) for where, text in stored_texts(t) if name in text]


def _without(records: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """An export as it is once ``name`` is erased: out of its events' recipients, and every
    other record that names them gone."""
    out = [{**r, "recipients": [u for u in r["recipients"] if u != name]}
           if r["kind"] == "event" else r for r in records]
    return [r for r in out if name not in json.dumps(r)]


@pytest.fixture
def world(any_store_url: str, clock: FrozenClock, sink: SmtpSink) -> Iterator[Tidings]:
    with open_tidings(any_store_url, clock=clock, types=(*TYPES, REPLY),
                      smtp_url=sink.url, token_secret=TOKEN_SECRET) as t:
        yield t


def test_an_erased_user_is_named_nowhere_and_everyone_else_keeps_theirs(
        world: Tidings, clock: FrozenClock) -> None:
    t = world
    # bob: notified alone and in a bundle, author of a mention, a post and a bundle member
    t.set_preferences("bob", {"email": {"address": "bob@example.org", "frequency": "daily"}})
    t.set_preferences("erin", {"email": {"address": "erin@example.org"}})
    t.follow("erin", "bob")
    t.follow("erin", "carol")
    t.follow("bob", "alice")
    t.subscribe("bob", "edit", "page:Fog")
    t.add_member("staff", "bob")
    t.push.add("bob", _phone())
    t.mute("alice", actor="bob")
    t.mute("alice", object="page:Oslo")
    t.mute("bob", actor="carol")
    linked = {}
    for actor in ("alice", "carol", "dave", "bob"):
        clock.advance(1)
        linked[actor] = t.publish({"type": "page-linked", "actor": actor,
                                   "object": "page:San_Francisco",
                                   "recipients": ["bob", "erin"]}).id
    clock.advance(1)
    mention = t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]}).id
    authored = [t.publish({"type": "mention", "actor": "bob", "recipients": ["erin"]}).id,
                t.publish({"type": "post", "actor": "bob", "object": "post:1"}).id,
                t.publish({"type": "reply", "actor": "bob", "recipients": ["erin"]}).id,
                linked["bob"]]  # erin's mail of the reply is logged: "bob replied"
    kept_post = t.publish({"type": "post", "actor": "carol", "object": "post:2"}).id
    # bob among others' events' recipients and exclude lists
    listed = t.publish({"type": "edit", "actor": "carol", "object": "page:Fog",
                        "recipients": ["erin", "bob"], "exclude": ["bob"]}).id
    t.publish({"type": "reply", "actor": "alice", "recipients": ["bob"]})  # a daily digest
    t.run_jobs()
    t.mark_read("bob", [mention])
    t.mark_seen("bob")
    t.report_bounce("bob@example.org")
    bundle_ids = {n["id"] for n in t.export_user("erin") if n["kind"] == "notification"}
    assert authored[0] in bundle_ids
    timeline = {str(e.id): e.actor for e in t.timeline("erin").items}
    assert timeline[authored[1]] == "bob"
    alice_before = list(t.export_user("alice"))
    assert t.queue.counts_by_func().get("email_digest") == 1  # queued for tomorrow
    assert _naming(t, "bob")

    with serve(create_app(t, api_keys=(SERVER_KEY,), token_secret=TOKEN_SECRET)) as base:
        bob_token = LiveServer(base, t).token("bob")
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {bob_token}"}) \
                as as_bob:
            refused = as_bob.delete("/v1/users/bob")
            assert refused.status_code == 403, refused.text
        with Client(base, SERVER_KEY) as server:
            assert server.erase_user("bob") == {"id": "erase:bob", "status": "accepted"}
            assert server.erase_user("bob") == {"id": "erase:bob", "status": "accepted"}
            t.run_jobs()
            assert _naming(t, "bob") == []
            # again, and a user never seen: accepted, nothing changes
            assert server.erase_user("bob")["status"] == "accepted"
            assert server.erase_user("nobody")["status"] == "accepted"
            t.run_jobs()
            assert server.notifications(user="erin")["items"]  # the server still answers
    assert t.erase_user_now("bob") == {}
    rebuildable = hot_store(t.store)
    if rebuildable is not None:  # a hot store rebuilt from its journal: bob stays gone
        before = [list(t.export_user(u)) for u in ("alice", "erin")]
        rebuildable.rebuild()
        assert [list(t.export_user(u)) for u in ("alice", "erin")] == before
        assert _naming(t, "bob") == []

    # the inboxes and timelines bob reached show nothing of his
    erin = list(t.export_user("erin"))
    notes = [r for r in erin if r["kind"] == "notification"]
    assert {n["actor"] for n in notes} == {"alice", "carol", "dave"}
    assert {n["id"] for n in notes} == bundle_ids - set(authored) | {listed}
    assert {str(e.id): e.actor for e in t.timeline("erin").items} == {
        i: actor for i, actor in timeline.items() if actor != "bob"}
    assert kept_post in timeline
    assert [f["user"] for f in erin if f["kind"] == "follow"] == ["carol"]
    event = t.get_event(listed)
    assert (event.recipients, event.exclude) == (["erin"], [])
    # everyone else's data as it was, but for what named bob
    assert list(t.export_user("alice")) == _without(alice_before, "bob")
    assert t.muted("alice") == {"actors": [], "objects": ["page:Oslo"]}
    # bob starts from nothing
    assert list(t.export_user("bob")) == [{"kind": "user", "user": "bob", "joined_at": None}]
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
    t.run_jobs()
    assert t.unread_count("bob").count == 1
    assert [n.actor for n in t.notifications("bob").items] == ["alice"]
