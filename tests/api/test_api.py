"""The HTTP API v1 through a real server on loopback, driven by :mod:`tidings.client`: every
route of the contract and its behaviour, on SQLite and PostgreSQL (``live``). Errors,
authentication and limits are in ``test_api_errors.py``, who may do what in
``test_api_authz.py``. Fan-out is the server's own embedded worker, so tests wait for it
(``live.settled()``) rather than run jobs themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from contract import Recorder, error_of, operation_of, undocumented
from engines import table_rows
from servers import SERVER_KEY, LiveServer
from tidings.channels.email import signing_secret, unsubscribe_token
from tidings.client import ApiError, AsyncClient, Client
from tidings.domain.bundling import count_display

pytest_plugins = ["servers"]

ONE_BACKEND = pytest.mark.parametrize("api_backend", ["sqlite"])  # the client or HTTP alone
NOTIFICATION_LATENCY = 1.0  # seconds from publish to the stream's frame


# -- helpers ----------------------------------------------------------------------------------


def counts(unread: int, *, unseen: int | None = None) -> dict[str, Any]:
    """An unread-count answer: ``unseen`` defaults to every unread one (none seen yet)."""
    unseen = unread if unseen is None else unseen
    return {"count": unread, "display": count_display(unread), "unseen": unseen,
            "unseen_display": count_display(unseen)}


def mention(client: Client, actor: str, *recipients: str, **fields: Any) -> str:
    return client.publish("mention", actor=actor, recipients=list(recipients), **fields)["id"]


def titles(client: Client, user: str, **filters: Any) -> list[str]:
    return [item["title"] for item in client.iter_notifications(user=user, **filters)]


# -- events -----------------------------------------------------------------------------------


def test_publish_is_accepted_and_fans_out_to_the_recipients(live: LiveServer) -> None:
    with live.http() as http, live.client() as server:
        response = http.post("/v1/events", json={
            "type": "mention", "actor": "alice", "object": "page:Rome",
            "recipients": ["bob", "carol", "dave"], "exclude": ["dave"], "payload": {"line": 3}})
        assert response.status_code == 202
        accepted = response.json()
        assert accepted == {"id": accepted["id"], "status": "accepted"}
        assert live.settled()

        for user in ("bob", "carol"):
            (item,) = server.notifications(user=user)["items"]
            assert item["id"] == accepted["id"]
            assert (item["type"], item["actor"], item["object"]) == ("mention", "alice",
                                                                     "page:Rome")
            assert item["payload"] == {"line": 3}
            assert item["title"] == "alice mentioned you on Rome"
            assert (item["read"], item["seen"], item["count"], item["others"]) == (
                False, False, 1, 0)
        assert server.notifications(user="dave")["items"] == []  # excluded
        assert server.notifications(user="alice")["items"] == []


def test_same_idempotency_key_and_body_returns_the_first_answer(live: LiveServer) -> None:
    event = {"type": "mention", "actor": "alice", "recipients": ["bob"],
             "idempotency_key": "link:42:17"}
    with live.http() as http, live.client() as server:
        first = http.post("/v1/events", json=event)
        again = http.post("/v1/events", json=event)
        assert (first.status_code, again.status_code) == (202, 202)
        assert again.json() == first.json()

        conflict = http.post("/v1/events", json={**event, "recipients": ["carol"]})
        assert conflict.status_code == 409
        assert error_of(conflict)["code"] == "idempotency_conflict"

        assert live.settled()
        assert len(table_rows(live.tidings, "events")) == 1
        assert server.unread_count(user="bob")["count"] == 1
        assert server.unread_count(user="carol")["count"] == 0


def test_idempotency_keys_are_scoped_per_server_key(
        start_server: Callable[..., LiveServer]) -> None:
    """Two applications (two server keys) using the same key each get their own event; the
    same key from the same server key is still deduplicated, and a different body is 409."""
    other_key = "another-server-key-9876543210"
    live = start_server(api_keys=(SERVER_KEY, other_key))
    event = {"type": "mention", "actor": "alice", "recipients": ["bob"],
             "idempotency_key": "link:42:17"}
    with live.http() as first_app, live.http(other_key) as second_app:
        first = first_app.post("/v1/events", json=event)
        second = second_app.post("/v1/events", json=event)
        assert (first.status_code, second.status_code) == (202, 202)
        assert first.json()["id"] != second.json()["id"]

        again = second_app.post("/v1/events", json=event)
        batch = first_app.post("/v1/events/batch", json={"events": [event]})
        assert (again.status_code, again.json()) == (202, second.json())
        (item,) = batch.json()["items"]
        assert (item["status"], item["id"]) == ("accepted", first.json()["id"])
        conflict = second_app.post("/v1/events", json={**event, "recipients": ["carol"]})
        assert conflict.status_code == 409
        assert error_of(conflict)["code"] == "idempotency_conflict"

        assert live.settled()
        assert len(table_rows(live.tidings, "events")) == 2
    with live.client() as server:
        assert server.unread_count(user="bob")["count"] == 2
        assert server.unread_count(user="carol")["count"] == 0


def test_batch_answers_each_event(live: LiveServer) -> None:
    with live.http() as http, live.client() as server:
        response = http.post("/v1/events/batch", json={"events": [
            {"type": "mention", "actor": "alice", "recipients": ["bob"]},
            {"type": "no-such-type", "recipients": ["bob"]},
            {"type": "mention", "recipients": ["not a user"]},
            {"type": "mention", "actor": "carol", "recipients": ["bob"], "bogus": 1},
            {"type": "message", "actor": "dave", "object": "talk:1", "recipients": ["bob"]},
        ]})
        assert response.status_code == 202
        items = response.json()["items"]
        assert [(i["index"], i["status"]) for i in items] == [
            (0, "accepted"), (1, "error"), (2, "error"), (3, "error"), (4, "accepted")]
        assert items[1]["error"]["code"] == "unknown_event_type"
        assert "type" in items[1]["error"]["message"]
        assert "recipients" in items[2]["error"]["message"]
        assert "bogus" in items[3]["error"]["message"]

        assert live.settled()
        assert sorted(titles(server, "bob")) == ["alice mentioned you on", "dave wrote on 1"]
        assert [i["id"] for i in server.iter_notifications(user="bob")] == [
            items[4]["id"], items[0]["id"]]

        assert http.post("/v1/events/batch", json={"events": []}).status_code == 422
        too_many = [{"type": "mention", "recipients": ["bob"]}] * 1001
        assert http.post("/v1/events/batch", json={"events": too_many}).status_code == 422


def test_retraction_removes_the_matching_notifications(live: LiveServer) -> None:
    with live.client() as server:
        for actor in ("alice", "carol"):
            server.publish("page-linked", actor=actor, object="page:SF", recipients=["bob"])
        server.publish("mention", actor="alice", recipients=["bob"])
        assert live.settled()
        assert server.notifications(user="bob", types=["page-linked"])["items"][0]["count"] == 2

        assert server.retract(type="page-linked", actor="alice") == 1
        (linked,) = server.notifications(user="bob", types=["page-linked"])["items"]
        assert (linked["actor"], linked["count"]) == ("carol", 1)
        assert server.retract(actor="nobody") == 0
        with pytest.raises(ApiError) as caught:
            server.retract()
        assert caught.value.status == 422


# -- event types and tokens -------------------------------------------------------------------


def test_types_are_listed_read_and_declared(live: LiveServer) -> None:
    with live.client() as server, live.client(live.token("bob")) as bob:
        assert {"mention", "page-linked", "edit", "post", "message"} <= {
            t["name"] for t in bob.types()}
        mention_type = bob.get_type("mention")
        assert (mention_type["category"], mention_type["priority"]) == ("mention", 2)
        assert mention_type["audience"] == ["recipients"]

        declared = server.put_type("like", {
            "category": "social", "bundle": "object", "priority": 7, "audience": ["recipients"],
            "templates": {"title": "{{ actor }} liked {{ object_title }}",
                          "bundled_title": "{{ actors_text }} liked {{ object_title }}"}})
        assert declared["name"] == "like"
        assert bob.get_type("like") == declared
        assert "like" in {t["name"] for t in server.types()}

        for actor in ("alice", "carol"):
            server.publish("like", actor=actor, object="photo:Sunset", recipients=["bob"])
        assert live.settled()
        assert titles(bob, "bob") == ["carol and 1 other liked Sunset"]

        with pytest.raises(ApiError) as missing:
            bob.get_type("no-such-type")
        assert missing.value.status == 404
        with pytest.raises(ApiError) as forbidden:
            bob.put_type("like", {"category": "mine"})
        assert forbidden.value.status == 403
        with pytest.raises(ApiError) as invalid:
            server.put_type("like", {"section": "sidebar"})
        assert invalid.value.status == 422 and "section" in invalid.value.message
        assert server.get_type("like")["category"] == "social"


@ONE_BACKEND
def test_minted_tokens_act_for_their_user(live: LiveServer) -> None:
    with live.client() as server:
        minted = server.mint_token("bob", ttl_seconds=120)
        expires = datetime.fromisoformat(minted["expires_at"].replace("Z", "+00:00"))
        assert abs((expires - datetime.now(UTC)).total_seconds() - 120) < 5
        mention(server, "alice", "bob")
        assert live.settled()
        with live.client(minted["token"]) as bob:
            assert bob.unread_count() == counts(1)
            with pytest.raises(ApiError) as caught:
                bob.mint_token("bob")
            assert caught.value.status == 403
        with pytest.raises(ApiError) as caught:
            server.mint_token("not a user")
        assert caught.value.status == 422


# -- the inbox --------------------------------------------------------------------------------


def test_a_bundle_is_listed_once_with_its_count_and_others(live: LiveServer) -> None:
    with live.client() as server:
        for actor in ("alice", "carol", "dave"):
            server.publish("page-linked", actor=actor, object="page:San_Francisco",
                           recipients=["bob"], payload={"from": actor})
        assert live.settled()
        (item,) = server.notifications(user="bob")["items"]
        assert item["title"] == "San Francisco was linked by dave and 2 others"
        assert (item["actor"], item["actors"]) == ("dave", ["dave", "carol", "alice"])
        assert (item["count"], item["others"], item["payload"]) == (3, 2, {"from": "dave"})
        assert server.unread_count(user="bob") == counts(1)


def test_a_bundle_opens_to_its_members_each_titled_alone(live: LiveServer) -> None:
    with live.client() as server, live.client(live.token("bob")) as bob, live.http() as http:
        ids = [server.publish("page-linked", actor=actor, object="page:San_Francisco",
                              recipients=["bob", "carol"], payload={"from": actor})["id"]
               for actor in ("alice", "carol", "dave")]
        other = mention(server, "erin", "bob")
        assert live.settled()
        first = bob.bundle_members(ids[-1], limit=2)
        assert [m["id"] for m in first["items"]] == [ids[2], ids[1]]
        rest = bob.bundle_members(ids[-1], limit=2, cursor=first["next_cursor"])
        assert ([m["id"] for m in rest["items"]], rest["next_cursor"]) == ([ids[0]], None)
        member = rest["items"][0]
        assert set(member) == {"id", "actor", "created_at", "read", "title", "payload",
                               "reason"}
        assert (member["actor"], member["read"], member["payload"], member["reason"]) == (
            "alice", False, {"from": "alice"}, "recipient")
        assert member["title"] == "San Francisco was linked by alice"
        # any member's id opens the group; a mention is its own group
        assert [m["id"] for m in server.bundle_members(ids[0], user="bob")["items"]] == \
            ids[::-1]
        assert [m["id"] for m in bob.bundle_members(other)["items"]] == [other]
        bob.mark_read(ids=[ids[-1]])
        assert all(m["read"] for m in bob.bundle_members(ids[0])["items"])

        response = http.get(f"/v1/users/bob/notifications/{ids[0]}/members")
        assert response.status_code == 200
        assert [m["id"] for m in response.json()["items"]] == ids[::-1]
        for call in (lambda: server.bundle_members(other, user="carol"),  # not carol's
                     lambda: bob.bundle_members("999999")):
            with pytest.raises(ApiError) as caught:
                call()
            assert (caught.value.status, caught.value.code) == (404, "not_found")
        for cursor in ("not a cursor", "zzz"):  # refused as the inbox list refuses it
            with pytest.raises(ApiError) as caught:
                bob.bundle_members(ids[0], cursor=cursor)
            with pytest.raises(ApiError) as listed:
                bob.notifications(cursor=cursor)
            assert (caught.value.status, caught.value.code) == (
                listed.value.status, listed.value.code)
            assert caught.value.status in (400, 422)


def test_a_user_exports_their_data_as_json_lines(live: LiveServer) -> None:
    with live.client() as server, live.http(live.token("bob")) as bob, \
            live.http(live.token("erin")) as erin, live.http() as http:
        linked = server.publish("page-linked", actor="alice", object="page:San_Francisco",
                                recipients=["bob"], payload={"from": "alice"})["id"]
        server.follow("alice", user="bob")
        server.publish("mention", actor="bob", recipients=["erin"])
        assert live.settled()
        for client, path in ((bob, "/v1/me/export"), (http, "/v1/users/bob/export")):
            response = client.get(path)
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("application/jsonl")
            assert response.text.endswith("\n")
            records = [json.loads(line) for line in response.text.splitlines()]
            assert records[0] == {"kind": "user", "user": "bob",
                                  "joined_at": records[0]["joined_at"]}
            kinds = {r["kind"] for r in records}
            assert {"notification", "follow", "event"} <= kinds
            (note,) = [r for r in records if r["kind"] == "notification"]
            assert (note["id"], note["payload"]) == (linked, {"from": "alice"})
        refused = erin.get("/v1/users/bob/export")  # another user's data
        assert refused.status_code == 403
        assert "bob" not in refused.text.replace("/v1/users/bob", "")


def test_inbox_filters_and_pages_without_skips_or_repeats(live: LiveServer) -> None:
    with live.client() as server:
        ids = [mention(server, f"user{i}", "bob") for i in range(5)]
        server.publish("message", actor="erin", object="talk:Tea", recipients=["bob"])
        assert live.settled()

        assert titles(server, "bob", types=["message"]) == ["erin wrote on Tea"]
        assert titles(server, "bob", section="message") == ["erin wrote on Tea"]
        assert titles(server, "bob", category="talk") == ["erin wrote on Tea"]
        assert len(titles(server, "bob", section="alert")) == 5

        first = server.notifications(user="bob", types=["mention"], limit=2)
        assert [i["id"] for i in first["items"]] == ids[::-1][:2]
        assert first["next_cursor"]
        mention(server, "late", "bob")  # arrives while paging: on top, never in later pages
        assert live.settled()
        seen = [i["id"] for i in first["items"]]
        cursor = first["next_cursor"]
        while cursor:
            page = server.notifications(user="bob", types=["mention"], limit=2, cursor=cursor)
            seen += [i["id"] for i in page["items"]]
            cursor = page["next_cursor"]
        assert seen == ids[::-1]

        server.mark_read(user="bob", ids=[ids[0]])
        unread = [i["id"] for i in server.iter_notifications(user="bob", unread=True)]
        assert ids[0] not in unread and len(unread) == 6
        read = [i["id"] for i in server.iter_notifications(user="bob", unread=False)]
        assert read == [ids[0]]


@ONE_BACKEND
def test_titles_follow_the_locale(live: LiveServer) -> None:
    with live.client() as server:
        for actor in ("alice", "carol"):
            server.publish("page-linked", actor=actor, object="page:Berlin", recipients=["bob"])
        assert live.settled()
        english = titles(server, "bob")
        german = titles(server, "bob", locale="de")
        assert english == ["Berlin was linked by carol and 1 other"]
        assert german != english and "carol" in german[0]
        server.put_preferences({"locale": "de"}, user="bob")
        assert titles(server, "bob") == german


def test_unread_count_is_capped_and_shown_as_99_plus(live: LiveServer) -> None:
    with live.client() as server:
        events = [{"type": "mention", "actor": f"a{i}", "recipients": ["bob"]}
                  for i in range(101)]
        assert {i["status"] for i in server.publish_batch(events)} == {"accepted"}
        mention(server, "alice", "carol")
        assert live.settled(timeout=30)
        assert server.unread_count(user="bob") == counts(100)
        assert server.unread_count(user="bob", types=["message"]) == counts(0)
        assert server.unread_count(user="carol") == counts(1)


def test_mark_read_by_ids_then_unread(live: LiveServer) -> None:
    with live.client() as server, live.client(live.token("bob")) as bob:
        ids = [mention(server, actor, "bob") for actor in ("alice", "carol", "dave")]
        assert live.settled()
        assert bob.mark_read(ids=ids[:2]) == 2
        assert bob.unread_count()["count"] == 1
        assert [i["read"] for i in bob.iter_notifications()] == [False, True, True]
        assert bob.mark_unread([ids[0]]) == 1
        assert bob.unread_count()["count"] == 2
        assert bob.mark_read(ids=["999999"]) == 0
        with pytest.raises(ApiError) as caught:
            bob.mark_read(ids=["x"])
        assert caught.value.status == 422 and "ids" in caught.value.message


def test_read_up_to_an_id_and_delete_one_recipients_notification(live: LiveServer) -> None:
    with live.client() as server, live.client(live.token("bob")) as bob:
        ids = [mention(server, actor, "bob", "carol") for actor in ("alice", "dave", "erin")]
        assert live.settled()
        assert bob.mark_read_up_to(ids[1]) == 2  # ids[0] and ids[1]
        assert [i["read"] for i in bob.iter_notifications()] == [False, True, True]
        assert server.mark_read_up_to(ids[0], user="bob") == 0  # below the mark: nothing
        assert bob.unread_count()["count"] == 1
        newer = mention(server, "frank", "bob")
        assert live.settled()
        assert bob.unread_count()["count"] == 2  # arrived above the mark

        bob.delete_notification(ids[2])
        server.delete_notification(newer, user="bob")
        assert [i["id"] for i in bob.iter_notifications()] == [ids[1], ids[0]]
        assert [i["id"] for i in server.iter_notifications(user="carol")] == ids[::-1]
        assert server.unread_count(user="carol")["count"] == 3

        for call in (lambda: bob.delete_notification(ids[2]),  # already gone
                     lambda: bob.mark_read_up_to(ids[2]),
                     lambda: server.delete_notification(ids[0], user="zed")):  # not theirs
            with pytest.raises(ApiError) as caught:
                call()
            assert (caught.value.status, caught.value.code) == (404, "not_found")


def test_group_members_are_added_listed_and_removed(live: LiveServer) -> None:
    with live.client() as server:
        assert server.add_member("staff", "bob") == {"group": "staff", "user": "bob",
                                                     "member": True}
        assert server.add_member("staff", "bob")["member"] is True  # idempotent
        for user in ("carol", "alice"):
            server.add_member("staff", user)
        server.add_member("other", "dave")
        first = server.members("staff", limit=2)
        assert [m["user"] for m in first["items"]] == ["alice", "bob"]
        rest = server.members("staff", limit=2, cursor=first["next_cursor"])
        assert ([m["user"] for m in rest["items"]], rest["next_cursor"]) == (["carol"], None)
        assert server.remove_member("staff", "bob") == {"group": "staff", "user": "bob",
                                                        "member": False}
        assert server.remove_member("staff", "bob")["member"] is False
        assert [m["user"] for m in server.members("staff")["items"]] == ["alice", "carol"]
        assert server.members("empty") == {"items": [], "next_cursor": None}


def test_mark_all_read_optionally_narrowed(live: LiveServer) -> None:
    with live.client() as server:
        mention(server, "alice", "bob")
        server.publish("message", actor="carol", object="talk:1", recipients=["bob"])
        server.publish("message", actor="dave", object="talk:2", recipients=["bob"])
        assert live.settled()
        assert server.mark_read(user="bob", all=True, section="message") == 2
        assert server.unread_count(user="bob") == counts(1)
        assert server.unread_count(user="bob", section="message")["count"] == 0
        assert server.mark_read(user="bob", all=True) == 1
        assert server.unread_count(user="bob")["count"] == 0

        mention(server, "erin", "bob")
        assert live.settled()
        assert server.unread_count(user="bob")["count"] == 1  # newer than the watermark
        with pytest.raises(ApiError) as caught:
            server.mark_read(user="bob", all=True, ids=["1"])
        assert caught.value.status == 422


def test_mark_read_by_match(live: LiveServer) -> None:
    with live.client() as server:
        mention(server, "alice", "bob", object="page:A")
        mention(server, "alice", "bob", object="page:B")
        mention(server, "carol", "bob", object="page:A")
        assert live.settled()
        assert server.mark_read(user="bob", match={"actor": "alice", "object": "page:B"}) == 1
        assert server.mark_read(user="bob", match={"object": "page:A"}) == 2
        assert server.unread_count(user="bob")["count"] == 0
        with pytest.raises(ApiError) as caught:
            server.mark_read(user="bob", match={})
        assert caught.value.status == 422 and "match" in caught.value.message


def test_seen_moves_a_watermark_apart_from_read(live: LiveServer) -> None:
    with live.client() as server:
        mention(server, "alice", "bob")
        assert live.settled()
        past = datetime(2001, 1, 1, tzinfo=UTC)
        assert server.mark_seen(user="bob", until=past).startswith("2001-01-01T00:00:00")
        assert [i["seen"] for i in server.iter_notifications(user="bob")] == [False]

        seen_until = server.mark_seen(user="bob")
        assert abs(datetime.fromisoformat(seen_until.replace("Z", "+00:00"))
                   - datetime.now(UTC)) < timedelta(seconds=5)
        (item,) = server.notifications(user="bob")["items"]
        assert (item["seen"], item["read"]) == (True, False)
        assert server.unread_count(user="bob") == counts(1, unseen=0)  # the badge clears

        mention(server, "carol", "bob")
        assert live.settled()
        assert server.unread_count(user="bob") == counts(2, unseen=1)
        assert server.unread_count(user="bob", section="message") == counts(0)


# -- subscriptions, follows, timeline, preferences --------------------------------------------


def test_subscriptions_are_created_paged_used_and_deleted(live: LiveServer) -> None:
    with live.client() as server, live.http() as http:
        response = http.post("/v1/users/bob/subscriptions",
                             json={"type": "page-linked", "object": "page:X"})
        assert response.status_code == 201
        first = response.json()["id"]
        second = server.add_subscription(user="bob", type="*", object="page:Y",
                                         channels=["web", "email"])
        third = server.add_subscription(user="bob")

        page = server.subscriptions(user="bob", limit=2)
        assert [s["id"] for s in page["items"]] == [first, second]
        assert page["items"][1]["channels"] == ["email", "web"]
        rest = server.subscriptions(user="bob", limit=2, cursor=page["next_cursor"])
        assert ([s["id"] for s in rest["items"]], rest["next_cursor"]) == ([third], None)
        assert (rest["items"][0]["type"], rest["items"][0]["object"]) == ("*", "*")

        server.publish("page-linked", actor="alice", object="page:X")  # no recipients named
        assert live.settled()
        assert titles(server, "bob") == ["X was linked by alice"]

        assert http.delete(f"/v1/users/bob/subscriptions/{first}").status_code == 204
        assert [s["id"] for s in server.subscriptions(user="bob")["items"]] == [second, third]
        with pytest.raises(ApiError) as missing:
            server.delete_subscription(first, user="bob")
        assert missing.value.status == 404
        with pytest.raises(ApiError) as unknown:
            server.add_subscription(user="bob", type="no-such-type")
        assert unknown.value.status == 422 and "type" in unknown.value.message


def test_follows_and_followers_page(live: LiveServer) -> None:
    with live.client() as server:
        for other in ("carol", "dave", "erin"):
            assert server.follow(other, user="bob") == {"user": "bob", "other": other,
                                                        "following": True}
        server.follow("carol", user="alice")
        server.follow("carol", user="bob")  # again: no duplicate

        page = server.following(user="bob", limit=2)
        assert [f["user"] for f in page["items"]] == ["carol", "dave"]
        rest = server.following(user="bob", limit=2, cursor=page["next_cursor"])
        assert ([f["user"] for f in rest["items"]], rest["next_cursor"]) == (["erin"], None)
        assert [f["user"] for f in server.followers(user="carol")["items"]] == ["alice", "bob"]

        assert server.unfollow("dave", user="bob")["following"] is False
        assert [f["user"] for f in server.following(user="bob")["items"]] == ["carol", "erin"]
        assert server.followers(user="dave")["items"] == []
        with pytest.raises(ApiError) as caught:
            server.follow("bob", user="bob")
        assert caught.value.status == 422
        assert [d["field"] for d in caught.value.details] == ["other"]


def test_timeline_shows_the_events_of_those_followed(live: LiveServer) -> None:
    with live.client() as server:
        server.follow("alice", user="bob")
        posted = server.publish("post", actor="alice", object="post:1", payload={"n": 1})["id"]
        server.publish("post", actor="carol", object="post:2")  # bob does not follow carol
        later = server.publish("edit", actor="alice", object="page:Rome")["id"]
        assert live.settled()

        timeline = server.timeline(user="bob")
        assert [e["id"] for e in timeline["items"]] == [later, posted]
        assert timeline["items"][1] == {
            "id": posted, "type": "post", "actor": "alice", "object": "post:1",
            "payload": {"n": 1}, "created_at": timeline["items"][1]["created_at"]}
        page = server.timeline(user="bob", limit=1)
        rest = server.timeline(user="bob", limit=1, cursor=page["next_cursor"])
        assert [e["id"] for e in page["items"] + rest["items"]] == [later, posted]
        assert server.timeline(user="carol")["items"] == []


def test_preferences_round_trip_and_mutes_apply_to_fanout(live: LiveServer) -> None:
    preferences = {
        "email": {"address": "bob@example.org", "frequency": "daily",
                  "timezone": "Europe/Berlin", "digest_hour": 7,
                  "muted_objects": ["page:Sandbox"],
                  "delays": {"talk": {"email_delay_seconds": 60, "email_unless_read": True}}},
        "channels": {"mention": {"web": True, "email": False}},
        "muted": {"actors": ["spammer"], "objects": ["page:Noisy"]},
        "locale": "en",
    }
    with live.client() as server, live.client(live.token("bob")) as bob:
        assert bob.get_preferences()["muted"] == {"actors": [], "objects": []}
        stored = bob.put_preferences(preferences)
        assert {key: stored[key] for key in preferences} == preferences
        assert server.get_preferences(user="bob") == stored

        mention(server, "spammer", "bob")
        mention(server, "alice", "bob", object="page:Noisy")
        mention(server, "alice", "bob", object="page:Fine")
        assert live.settled()
        assert titles(bob, "bob") == ["alice mentioned you on Fine"]

        with pytest.raises(ApiError) as caught:
            bob.put_preferences({"email": {"timezone": "Mars/Olympus"}})
        assert caught.value.status == 422 and "timezone" in caught.value.message
        with pytest.raises(ApiError) as caught:
            bob.put_preferences({"email": {"frequency": "hourly"}})
        assert caught.value.status == 422 and "frequency" in caught.value.message
        assert bob.get_preferences() == stored


# -- live updates -----------------------------------------------------------------------------


def test_stream_delivers_the_count_and_new_items(live: LiveServer) -> None:
    with live.client() as server, live.client(live.token("bob")) as bob, \
            live.client(live.token("bob")) as other_device:
        frames = bob.stream(timeout=10)
        with contextlib.closing(frames):
            assert next(frames) == ("unread", counts(0))

            published = time.monotonic()
            event_id = mention(server, "alice", "bob")
            got: dict[str, Any] = {}
            for event, data in frames:
                got[event] = data
                if {"notification", "unread"} <= set(got):
                    break
            latency = time.monotonic() - published
            assert got["notification"]["id"] == event_id
            assert got["notification"]["title"] == "alice mentioned you on"
            assert got["unread"] == counts(1)
            assert latency < NOTIFICATION_LATENCY, f"the stream took {latency:.2f} s"

            other_device.mark_seen()  # opened there: the badge clears here, the dot stays
            assert next(frames) == ("unread", counts(1, unseen=0))
            assert other_device.mark_read(all=True) == 1
            assert next(frames) == ("unread", counts(0))


@ONE_BACKEND
def test_stream_takes_a_query_token_and_ends_at_its_timeout(live: LiveServer) -> None:
    token = live.token("bob")
    with live.http(None) as http:
        with http.stream("GET", "/v1/me/stream", params={"access_token": token}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
        refused = http.get("/v1/me/notifications", params={"access_token": token})
        assert refused.status_code == 401  # query tokens are for streams only
    with live.client(live.token("bob")) as bob:
        started = time.monotonic()
        assert list(bob.stream(timeout=0.5)) == [("unread", counts(0))]
        assert 0.5 <= time.monotonic() - started < 1.5
        with pytest.raises(ApiError) as caught:
            next(bob.stream(user="carol", timeout=1))
        assert caught.value.status == 403


@ONE_BACKEND
def test_async_client(live: LiveServer) -> None:
    async def scenario() -> None:
        async with AsyncClient(live.base_url, SERVER_KEY) as server, \
                AsyncClient(live.base_url, live.token("bob")) as bob:
            frames = bob.stream(timeout=5)
            assert await anext(frames) == ("unread", counts(0))
            accepted = await server.publish("mention", actor="alice", recipients=["bob"])
            async for event, data in frames:
                if event == "notification":
                    assert data["id"] == accepted["id"]
                    break
            await frames.aclose()
            assert [i["id"] async for i in bob.iter_notifications()] == [accepted["id"]]
            assert await bob.mark_read(ids=[accepted["id"]]) == 1
            assert await bob.unread_count() == counts(0)
            with pytest.raises(ApiError) as caught:
                await bob.notifications(user="carol")
            assert caught.value.status == 403
            assert (await server.healthz())["status"] == "ok"
            started = time.monotonic()
            assert [f async for f in bob.stream(timeout=0.3)] == [
                ("unread", counts(0))]
            assert time.monotonic() - started < 1.5

    asyncio.run(scenario())


# -- operations -------------------------------------------------------------------------------


@ONE_BACKEND
def test_health_readiness_and_metrics(live: LiveServer) -> None:
    with live.client(None) as anonymous, live.client() as server:
        assert anonymous.healthz() == {"status": "ok"}
        assert anonymous.readyz() == {"status": "ready"}
        event_id = mention(server, "alice", "bob", "carol")
        mention(server, "alice", "bob", idempotency_key="k1")
        mention(server, "alice", "bob", idempotency_key="k1")  # not counted twice
        assert live.settled()
        server.mark_read(user="bob", ids=[event_id])
        server.mark_seen(user="bob")

        text = anonymous.metrics()
    values = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
              for line in text.splitlines() if line and not line.startswith("#")}
    assert values["tidings_events_accepted_total"] == 2
    assert values["tidings_notifications_written_total"] == 3
    assert values["tidings_notifications_read_total"] == 1
    assert values["tidings_seen_marks_total"] == 1
    assert values['tidings_jobs_total{outcome="completed"}'] >= 2
    assert values["tidings_fanout_duration_seconds_count"] >= 2
    assert any(k.startswith("tidings_http_request_duration_seconds_count{") and
               'route="/v1/events"' in k for k in values)


# -- the contract ------------------------------------------------------------------------------

CONTRACT_ROUTES = [  # API.md, route by route
    ("POST", "/v1/events"), ("POST", "/v1/events/batch"), ("POST", "/v1/retractions"),
    ("GET", "/v1/types"), ("GET", "/v1/types/{name}"), ("PUT", "/v1/types/{name}"),
    ("POST", "/v1/tokens"),
    ("GET", "/v1/users/{user}/notifications"),
    ("GET", "/v1/users/{user}/notifications/unread-count"),
    ("GET", "/v1/users/{user}/notifications/{notification_id}/members"),
    ("POST", "/v1/users/{user}/notifications/read"),
    ("POST", "/v1/users/{user}/notifications/unread"),
    ("POST", "/v1/users/{user}/notifications/seen"),
    ("GET", "/v1/users/{user}/subscriptions"), ("POST", "/v1/users/{user}/subscriptions"),
    ("DELETE", "/v1/users/{user}/subscriptions/{subscription_id}"),
    ("PUT", "/v1/users/{user}/follows/{other}"), ("DELETE", "/v1/users/{user}/follows/{other}"),
    ("GET", "/v1/users/{user}/follows"), ("GET", "/v1/users/{user}/followers"),
    ("GET", "/v1/users/{user}/timeline"),
    ("GET", "/v1/users/{user}/preferences"), ("PUT", "/v1/users/{user}/preferences"),
    ("GET", "/v1/users/{user}/stream"),
    ("GET", "/v1/users/{user}/export"), ("DELETE", "/v1/users/{user}"),
    ("POST", "/v1/unsubscribe/{token}"),
    ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"),
]


def test_openapi_publishes_every_route_of_the_contract(shared_live: LiveServer,
                                                      openapi_spec: dict[str, Any]) -> None:
    published = {(m.upper(), p) for p, ops in openapi_spec["paths"].items() for m in ops}
    missing = [r for r in CONTRACT_ROUTES if r not in published]
    assert not missing
    me = {(m, p.replace("/v1/users/{user}", "/v1/me")) for m, p in CONTRACT_ROUTES
          if p.startswith("/v1/users/{user}/")}  # the erasure is the server's alone
    assert me <= published
    with shared_live.http(None) as browser:  # the pages the contract names besides the routes
        for page in ("/docs", "/"):
            response = browser.get(page)
            assert response.status_code == 200, page
            assert response.headers["content-type"].startswith("text/html"), page


def test_every_answer_is_as_documented(live: LiveServer) -> None:
    """A tour of every route; each status and every field of each answer must be in
    /openapi.json, and every published operation must have been visited."""
    recorder = Recorder()
    with live.http(None) as http:
        spec = http.get("/openapi.json").json()
    bob_token = live.token("bob")
    with live.client(transport=recorder) as server, \
            live.client(bob_token, transport=recorder) as bob:
        server.put_type("like", {"bundle": "object", "audience": ["recipients"]})
        server.types()
        server.get_type("like")
        server.mint_token("bob")
        liked = server.publish("like", actor="alice", object="photo:1", recipients=["bob"])
        server.publish_batch([{"type": "like", "actor": "carol", "object": "photo:1",
                               "recipients": ["bob"]}, {"type": "nope"}])
        assert live.settled()
        for who, user in ((server, "bob"), (bob, None)):
            who.notifications(user=user, limit=1)
            who.bundle_members(liked["id"], user=user, limit=1)
            who.unread_count(user=user)
            who.mark_read(user=user, ids=[liked["id"]])
            who.mark_unread([liked["id"]], user=user)
            who.mark_seen(user=user)
            for act in (who.archive, who.unarchive, who.save, who.unsave, who.unsnooze):
                act([liked["id"]], user=user)
            # a second from now: its job (unsnooze) has run when the server next settles
            who.snooze([liked["id"]], datetime.now(UTC) + timedelta(seconds=1), user=user)
            who.notifications(user=user, state="snoozed")
            who.unsnooze([liked["id"]], user=user)
            sub = who.add_subscription(user=user, object="page:X")
            who.subscriptions(user=user)
            who.delete_subscription(sub, user=user)
            who.follow("alice", user=user)
            who.following(user=user)
            who.followers(user=user)
            who.unfollow("alice", user=user)
            who.timeline(user=user)
            who.export_user(user=user)
            who.put_preferences(who.get_preferences(user=user), user=user)
            with contextlib.closing(who.stream(user=user, timeout=2)) as frames:
                next(frames)
        for who, user in ((server, "bob"), (bob, None)):
            who.mark_read_up_to(liked["id"], user=user)
            fresh = mention(server, "alice", "bob")
            assert live.settled()
            who.delete_notification(fresh, user=user)
        server.add_member("staff", "bob")
        server.members("staff")
        server.remove_member("staff", "bob")
        server.retract(type="like")
        assert server.erase_user("mallory") == {"id": "erase:mallory", "status": "accepted"}
        assert server.report_bounce("Bob@Example.org") == {"address": "bob@example.org",
                                                          "bounced": True}
        assert server.clear_bounce("bob@example.org")["bounced"] is False
        server.healthz()
        server.readyz()
        server.metrics()
        with pytest.raises(ApiError) as no_key:  # Web Push's routes
            bob.push_public_key()
        assert no_key.value.status == 404  # no VAPID key on this server
        phone = push_subscription("https://93.184.216.34/push/phone")  # a public address
        for user in (None, "bob"):
            made = bob.add_push_subscription(phone, user=user)
            assert [s["id"] for s in bob.push_subscriptions(user=user)] == [made["id"]]
            bob.delete_push_subscription(made["id"], user=user)
    live.tidings.set_preferences("bob", {"email": {"address": "bob@example.org"}})
    token = unsubscribe_token(signing_secret(live.tidings.config), "bob", "bob@example.org")
    link = f"/v1/unsubscribe/{token}"
    with httpx.Client(base_url=live.base_url, transport=recorder) as browser:
        assert browser.head("/healthz").status_code == 200  # a load balancer's probe
        assert browser.head("/readyz").status_code == 200
        assert browser.get(link).status_code == 200
        assert browser.post(link).status_code == 200
        assert browser.post(f"{link}/undo").status_code == 200
        live.tidings.set_preferences("bob", {"email": {"address": "bob@new.example.org"}})
        assert browser.post(link).status_code == 410  # sent to the old address
        sealed, _, code = link.rpartition(".")  # the sealed part altered, its shape kept
        forged = f"{sealed[:-4]}{'AAAA' if not sealed.endswith('AAAA') else 'BBBB'}.{code}"
        assert browser.post(forged).status_code == 404

    problems = [p for method, path, status, body in recorder.exchanges
                for p in undocumented(spec, method, path, status, body)]
    assert problems == []
    visited = {(m, operation_of(spec, m, p)[0]) for m, p, _, _ in recorder.exchanges}
    published = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops
                 if p not in ("/openapi.json",)}
    assert published - visited == set()


def push_subscription(endpoint: str) -> dict[str, Any]:
    """A browser's ``PushSubscription`` JSON with keys of its own."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from pushservice import b64url

    point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"endpoint": endpoint, "keys": {"p256dh": b64url(point),
                                           "auth": b64url(b"0123456789abcdef")}}


@ONE_BACKEND
def test_client_escapes_dot_user_ids(live: LiveServer) -> None:
    with live.client() as server:
        for user in (".", "..", "a.b", "x:y@z"):
            mention(server, "alice", user)
        assert live.settled()
        for user in (".", "..", "a.b", "x:y@z"):
            assert server.unread_count(user=user)["count"] == 1, user
