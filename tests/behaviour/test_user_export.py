"""A person's data on request (``Tidings.export_user``) on every store: every kind of record
kept about one user, their notifications bundle member by member, and nothing of anyone
else's."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pushservice import b64url
from tidings.clock import FrozenClock
from tidings.engine import Tidings
from tidings.exceptions import InvalidInput
from tidings.services.people import KINDS

PHONE_ENDPOINT = "https://93.184.216.34/push/bob"  # a public address


def _phone() -> dict[str, Any]:
    """A browser's ``PushSubscription`` JSON with keys of its own."""
    point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"endpoint": PHONE_ENDPOINT, "keys": {"p256dh": b64url(point),
                                                 "auth": b64url(b"0123456789abcdef")}}


def _by_kind(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        found.setdefault(record["kind"], []).append(record)
    return found


def test_everything_kept_about_a_user_and_nothing_of_anyone_elses(
        t: Tidings, clock: FrozenClock) -> None:
    t.add_user("bob")
    links = []
    for actor in ("alice", "carol", "dave"):
        clock.advance(1)
        links.append(t.publish({"type": "page-linked", "actor": actor,
                                "object": "page:San_Francisco", "recipients": ["bob", "erin"],
                                "payload": {"by": actor}}).id)
    clock.advance(1)
    mention = t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
                         "payload": {"text": "hi"}}).id
    authored = t.publish({"type": "mention", "actor": "bob", "recipients": ["erin"],
                          "payload": {"text": "yo"}}).id
    t.run_jobs()
    t.mark_read("bob", [mention])
    t.mark_seen("bob")
    t.subscribe("bob", "edit", "page:Fog")
    t.follow("bob", "alice")
    t.follow("erin", "bob")
    t.follow("erin", "carol")
    t.set_preferences("bob", {"email": {"address": "bob@example.org"}})
    t.mute("bob", object="page:Rome")  # after: a preferences document sets the mutes too
    t.report_bounce("bob@example.org")
    t.push.add("bob", _phone())

    records = list(t.export_user("bob"))
    json.dumps(records)  # every record is JSON as it stands
    kinds = _by_kind(records)
    assert list(dict.fromkeys(r["kind"] for r in records)) == [
        k for k in KINDS if k in kinds]  # kind by kind, in the documented order
    assert kinds["user"] == [{"kind": "user", "user": "bob",
                              "joined_at": kinds["user"][0]["joined_at"]}]
    notes = kinds["notification"]
    assert [n["id"] for n in notes] == [mention, *links[::-1]]
    assert {n["group"] for n in notes[1:]} == {links[-1]}  # one bundle, member by member
    assert [n["title"] for n in notes[1:]] == [
        f"San Francisco was linked by {a}" for a in ("dave", "carol", "alice")]
    assert [n["read"] for n in notes] == [True, False, False, False]
    assert notes[0]["payload"] == {"text": "hi"}
    assert {m["scope"] for m in kinds["read_marker"]} >= {"seen"}
    assert [(s["type"], s["object"]) for s in kinds["subscription"]] == [
        ("edit", "page:Fog")]
    assert [f["user"] for f in kinds["follow"]] == ["alice"]
    assert [f["user"] for f in kinds["follower"]] == ["erin"]
    assert kinds["mute"] == [{"kind": "mute", "object": "page:Rome"}]
    assert kinds["preferences"][0]["preferences"]["email"]["address"] == "bob@example.org"
    assert kinds["bounce"] == [{"kind": "bounce", "address": "bob@example.org",
                                "bounced": True}]
    assert [p["endpoint"] for p in kinds["push_subscription"]] == [PHONE_ENDPOINT]
    assert [(e["id"], e["payload"], e["recipients"]) for e in kinds["event"]] == [
        (authored, {"text": "yo"}, ["erin"])]
    # nothing of erin's: not her notifications, not the follow she made of carol
    assert "carol" not in {f["user"] for f in kinds.get("follower", []) + kinds["follow"]}
    assert Counter(r["kind"] for r in t.export_user("erin"))["notification"] == 4


def test_a_user_never_seen_exports_only_their_id(t: Tidings) -> None:
    assert list(t.export_user("nobody")) == [
        {"kind": "user", "user": "nobody", "joined_at": None}]
    with pytest.raises(InvalidInput):
        list(t.export_user("no body"))
