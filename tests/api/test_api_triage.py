"""The inbox's triage over HTTP and through both clients: archive, save, snooze and their
undoing, ``state=`` on the list, the items' ``archived``/``saved``/``snoozed_until``, and
every 4xx a user can cause (the behaviour on every store: ``tests/behaviour/test_triage.py``;
a user token on another user: ``test_api_authz.py``'s matrix)."""

from __future__ import annotations

import asyncio

import httpx

from engines import table_names, table_rows
from servers import LiveServer
from tidings.client import AsyncClient

pytest_plugins = ["servers"]
LATER = "2999-01-02T03:04:05Z"


def _error(response: httpx.Response, status: int, field: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["message"].startswith(f"{field}: ") or field in error["message"], error
    assert field in {d["field"] for d in error.get("details", [])}, error


def test_triage_routes_and_their_errors(live: LiveServer) -> None:
    with live.client() as server, live.http() as http:
        mine = [server.publish("mention", actor="ann", object=f"page:{i}",
                               recipients=["bob"])["id"] for i in range(3)]
        carols = server.publish("mention", actor="ann", recipients=["carol"])["id"]
        assert live.settled()

        assert server.archive([mine[0]], user="bob") == 1
        assert server.save([mine[1]], user="bob") == 1
        assert server.snooze([mine[2]], LATER, user="bob") == 1

        def listed(state: str | None = None) -> list[tuple[str, bool, bool, str | None]]:
            return [(i["id"], i["archived"], i["saved"], i["snoozed_until"])
                    for i in server.notifications(user="bob", state=state)["items"]]

        assert listed() == [(mine[1], False, True, None)]
        assert listed("archived") == [(mine[0], True, False, None)]
        assert listed("saved") == [(mine[1], False, True, None)]
        assert listed("snoozed") == [(mine[2], False, False, LATER)]
        assert server.unread_count(user="bob")["count"] == 1

        # the user's own token, under /v1/me, through the async client
        async def undo() -> list[int]:
            async with AsyncClient(live.base_url, token=live.token("bob")) as me:
                return [await me.unarchive([mine[0]]), await me.unsave([mine[1]]),
                        await me.unsnooze([mine[2]])]

        assert asyncio.run(undo()) == [1, 1, 1]
        assert [i for i, *_ in listed()] == list(reversed(mine))

        # bad input: a 4xx naming the field, nothing changed
        before = {name: table_rows(live.tidings, name) for name in table_names()}
        _error(http.get("/v1/users/bob/notifications", params={"state": "done"}), 422, "state")
        for until in ("2001-01-01T00:00:00Z", "tomorrow", None):
            body = {"ids": [mine[0]]} if until is None else {"ids": [mine[0]], "until": until}
            _error(http.post("/v1/users/bob/notifications/snooze", json=body), 422, "until")
        for route in ("archive", "unarchive", "save", "unsave", "unsnooze"):
            refused = http.post(f"/v1/users/bob/notifications/{route}",
                                json={"ids": [mine[0], carols]})
            assert refused.status_code == 404, refused.text
            assert carols in refused.json()["error"]["message"]
        refused = http.post("/v1/users/bob/notifications/snooze",
                            json={"ids": [carols], "until": LATER})
        assert refused.status_code == 404
        _error(http.post("/v1/users/bob/notifications/archive", json={"ids": "1"}), 422, "ids")
        assert {name: table_rows(live.tidings, name) for name in table_names()} == before
