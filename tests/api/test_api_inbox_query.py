"""The inbox query dimensions over HTTP and through the client (issue: Jiepang's query):
``actor``, ``object``, ``max_id``, ``since_id`` and ``payload.FIELD`` on the list and the
unread count, on SQLite and PostgreSQL (``live``); the engine's own checks run on every store
in ``test_inbox_query.py``. Unknown parameters and fields stay a 400 naming them."""

from __future__ import annotations

from typing import Any

import httpx

from servers import LiveServer
from tidings.domain.flags import REASONS

pytest_plugins = ["servers"]


def _error(response: httpx.Response, status: int, *names: str) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    for name in names:
        assert name in message, message


def test_list_and_count_take_the_query_dimensions(live: LiveServer) -> None:
    with live.client() as server, live.http() as http:
        info = server.put_type("review", {"category": "review", "audience": ["recipients"],
                                          "queryable": ["lang", "rank", "lang"]})
        assert info["queryable"] == ["lang", "rank"]
        assert server.get_type("review")["queryable"] == ["lang", "rank"]
        posted = [server.publish("review", actor=actor, object=obj, recipients=["bob"],
                                 payload=payload)["id"]
                  for actor, obj, payload in [
                      ("ann", "page:A", {"lang": "de", "rank": 5}),
                      ("cat", "page:A", {"lang": "en", "rank": 5}),
                      ("ann", "page:B", {"lang": "de", "rank": 1}),
                      ("ann", "page:A", {"lang": "de"})]]
        assert live.settled()
        e = posted

        def listed(**query: Any) -> list[str]:
            return [i["id"] for i in server.notifications(user="bob", **query)["items"]]

        assert listed(actor="ann") == [e[3], e[2], e[0]]
        assert listed(object="page:A", actor="ann") == [e[3], e[0]]
        assert listed(max_id=e[2], since_id=e[0]) == [e[1]]
        assert listed(payload={"lang": "de", "rank": 5}) == [e[0]]
        assert listed(payload={"rank": 5}, actor="cat") == [e[1]]
        assert [i["id"] for i in server.iter_notifications(
            user="bob", payload={"lang": "de"}, page_size=1)] == [e[3], e[2], e[0]]
        count = server.unread_count(user="bob", payload={"lang": "de"}, object="page:A")
        assert (count["count"], count["unseen"]) == (2, 2)
        assert server.unread_count(user="bob", since_id=e[1], actor="ann")["count"] == 2
        assert server.unread_count(user="bob", max_id=e[1])["display"] == "1"

        raw = http.get("/v1/users/bob/notifications", params={"payload.lang": "en"})
        assert [i["id"] for i in raw.json()["items"]] == [e[1]]
        raw = http.get("/v1/users/bob/notifications/unread-count",
                       params={"payload.rank": "1", "types": "review"})
        assert raw.json()["count"] == 1
        token = live.token("bob")
        mine = http.get("/v1/me/notifications", params={"payload.lang": "en", "actor": "cat"},
                        headers={"Authorization": f"Bearer {token}"})
        assert [i["id"] for i in mine.json()["items"]] == [e[1]]

        # refused, naming what is wrong
        for path in ("/v1/users/bob/notifications", "/v1/users/bob/notifications/unread-count"):
            _error(http.get(path, params={"payload.secret": "x"}), 400, "payload.secret")
            _error(http.get(path, params={"payload.lang": "de", "types": "mention"}), 400,
                   "payload.lang")
            _error(http.get(path, params={"payload.a b": "x"}), 400, "payload.a b")
            _error(http.get(path, params={"payload.lang": "x" * 256}), 422, "payload.lang")
            _error(http.get(path, params=[("payload.lang", "de"), ("payload.lang", "en")]),
                   400, "payload.lang")
            _error(http.get(path, params={"max_id": "x"}), 422, "max_id")
            _error(http.get(path, params={"since_id": "0"}), 422, "since_id")
            _error(http.get(path, params={"actor": "a b"}), 422, "actor")
            _error(http.get(path, params={"sort": "asc", "actor": "ann"}), 400,
                   "unknown query parameter: sort")
        # elsewhere payload conditions are unknown parameters
        _error(http.get("/v1/users/bob/follows", params={"payload.lang": "de"}), 400,
               "unknown query parameter: payload.lang")
        _error(http.put("/v1/types/bad", json={"queryable": ["a.b"]}), 422, "queryable")


def test_list_and_count_narrow_by_reason(live: LiveServer) -> None:
    """Each item says why it arrived; ``reason`` and ``participating`` narrow the list and the
    count (through the client too); a reason no one has, or a bad flag, is a 422 naming it."""
    with live.client() as server, live.http() as http:
        info = server.put_type("note", {"audience": ["recipients", "actor_followers"],
                                        "mentions": "cc"})
        assert info["mentions"] == "cc"
        server.follow("ann", user="bob")
        posted = [server.publish("note", actor="ann", object=f"page:{i}", recipients=named,
                                 payload={"cc": cc})["id"]
                  for i, (named, cc) in enumerate([([], []), (["bob"], []), (["bob"], ["bob"])])]
        assert live.settled()
        e = posted
        items = server.notifications(user="bob")["items"]
        assert [(i["id"], i["reason"]) for i in items] == [
            (e[2], "mention"), (e[1], "recipient"), (e[0], "following")]
        assert [i["id"] for i in server.notifications(user="bob", participating=True)[
            "items"]] == [e[2], e[1]]
        assert [i["id"] for i in server.iter_notifications(
            user="bob", reason=["following", "mention"], page_size=1)] == [e[2], e[0]]
        assert server.unread_count(user="bob", participating=True)["count"] == 2
        raw = http.get("/v1/users/bob/notifications/unread-count",
                       params={"reason": "following,subscribed"})
        assert raw.json()["count"] == 1
        every = http.get("/v1/users/bob/notifications", params={"reason": ",".join(REASONS)})
        assert len(every.json()["items"]) == 3
        raw = http.get("/v1/users/bob/notifications",
                       params={"reason": "recipient", "participating": "false"})
        assert [i["id"] for i in raw.json()["items"]] == [e[1]]
        for path in ("/v1/users/bob/notifications", "/v1/users/bob/notifications/unread-count"):
            _error(http.get(path, params={"reason": "friend"}), 422, "reason")
            _error(http.get(path, params={"reason": "mention,"}), 422, "reason")
            _error(http.get(path, params={"reason": ""}), 422, "reason")
            _error(http.get(path, params={"reason": "Mention"}), 422, "reason")
            _error(http.get(path, params={"participating": "maybe"}), 422, "participating")
        _error(http.put("/v1/types/bad", json={"mentions": "a.b"}), 422, "mentions")
