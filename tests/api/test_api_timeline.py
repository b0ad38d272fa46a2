"""The timeline over HTTP, through a real server on loopback (``live``, SQLite and PostgreSQL):
paging by the opaque cursor and by the numeric ``max_id`` / ``since_id``, on ``/v1/users/{user}``
and ``/v1/me``; paging while posts arrive neither skips nor repeats; and the stream's
``timeline`` frame when someone followed posts, whichever timeline model serves the follower.
Bad values of the parameters are in ``test_api_errors.py``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import pytest

from servers import LiveServer
from tidings.client import Client

pytest_plugins = ["servers"]

STREAM_SECONDS = 20.0  # far below the 60 s poll of the streams that must be woken
# Each timeline model; hybrid with a threshold of one follower: carol (followed by bob and
# dave) is merged in at read time, alice (followed by bob alone) pushed into mailboxes.
MODELS = pytest.mark.parametrize("model", [
    {"timeline_model": "push"}, {"timeline_model": "pull"},
    {"timeline_model": "hybrid", "celebrity_followers": 1}],
    ids=["push", "pull", "hybrid"])


def post(server: Client, actor: str, n: int) -> str:
    return server.publish("post", actor=actor, object=f"post:{n}")["id"]


def ids(page: dict[str, Any]) -> list[str]:
    return [entry["id"] for entry in page["items"]]


def test_max_id_and_since_id_page_the_timeline(live: LiveServer) -> None:
    with live.client() as server, live.client(live.token("bob")) as bob:
        server.follow("alice", user="bob")
        posted = [post(server, "alice", n) for n in range(5)]  # ids ascending
        assert live.settled()
        newest = posted[::-1]

        assert ids(bob.timeline(limit=2)) == newest[:2]
        assert ids(bob.timeline(limit=2, max_id=newest[1])) == newest[2:4]  # older than it
        assert ids(server.timeline(user="bob", max_id=int(posted[1]))) == [posted[0]]
        assert ids(bob.timeline(since_id=posted[2])) == newest[:2]  # newer than it
        assert ids(bob.timeline(since_id=posted[0], max_id=posted[4])) == newest[1:4]
        assert bob.timeline(since_id=posted[4]) == {"items": [], "next_cursor": None}

        # more new entries than fit: the newest of them, then the cursor pages down to since_id
        page = bob.timeline(limit=2, since_id=posted[0])
        assert ids(page) == newest[:2]
        rest = bob.timeline(limit=2, since_id=posted[0], cursor=page["next_cursor"])
        assert (ids(rest), rest["next_cursor"]) == (newest[2:4], None)

        # the cursor and max_id are both upper bounds: the lower one applies
        first = bob.timeline(limit=2)
        assert ids(bob.timeline(limit=2, cursor=first["next_cursor"], max_id=newest[0])) \
            == newest[2:4]
        assert ids(bob.timeline(limit=2, cursor=first["next_cursor"], max_id=newest[3])) \
            == newest[4:]


@MODELS
def test_paging_while_posts_arrive_never_skips_nor_repeats(
        start_server: Callable[..., LiveServer], model: dict[str, Any]) -> None:
    live = start_server(config=model)
    with live.client() as server, live.client(live.token("bob")) as bob:
        server.follow("alice", user="bob")
        server.follow("carol", user="bob")
        server.follow("carol", user="dave")
        before = [post(server, actor, n) for n, actor in enumerate(["alice", "carol"] * 4)]
        assert live.settled()
        arrived: list[str] = []

        def arrive() -> None:  # a followee posts between two pages
            arrived.append(post(server, ["alice", "carol"][len(arrived) % 2], 100 + len(arrived)))
            assert live.settled()

        by_cursor = bob.timeline(limit=3)
        seen, cursor = ids(by_cursor), by_cursor["next_cursor"]
        while cursor is not None:
            arrive()
            page = bob.timeline(limit=3, cursor=cursor)
            seen, cursor = seen + ids(page), page["next_cursor"]
        assert seen == before[::-1]

        by_number = bob.timeline(limit=3, max_id=int(before[-1]) + 1)
        numbered = ids(by_number)
        while by_number["items"]:
            arrive()
            by_number = bob.timeline(limit=3, max_id=numbered[-1])
            numbered += ids(by_number)
        assert numbered == before[::-1]

        # what came meanwhile: everything newer than the first entry shown, each once
        assert [e["id"] for e in bob.iter_timeline(since_id=seen[0], page_size=2)] \
            == arrived[::-1]
        assert ids(bob.timeline(limit=100)) == arrived[::-1] + before[::-1]


def _frames_until(frames: Any, wanted: Callable[[list[tuple[str, Any]]], bool]
                  ) -> list[tuple[str, Any]]:
    got: list[tuple[str, Any]] = []
    for frame in frames:
        got.append(frame)
        if wanted(got):
            break
    return got


def _timeline_frames(got: list[tuple[str, Any]]) -> list[str]:
    return [data["id"] for event, data in got if event == "timeline"]


@MODELS
def test_the_stream_announces_a_followees_post(
        start_server: Callable[..., LiveServer], model: dict[str, Any]) -> None:
    """The stream polls every 60 s: a frame within seconds came because fan-out told the
    follower's stream. Bob reads posts on his timeline only (no inbox rows for them), so the
    timeline alone has to wake his stream."""
    live = start_server(stream_interval=60.0, config=model)
    with live.client() as server, live.client(live.token("bob")) as bob:
        server.follow("alice", user="bob")
        server.follow("alice", user="dave")  # hybrid: two followers, so alice is pulled
        server.put_preferences({"channels": {"post": {"web": False}}}, user="bob")
        old = post(server, "alice", 0)
        assert live.settled()
        frames = bob.stream(timeout=STREAM_SECONDS)
        with contextlib.closing(frames):
            assert next(frames)[0] == "unread"
            started = time.monotonic()
            post(server, "carol", 1)  # not followed: no frame
            new = [post(server, "alice", 2), post(server, "alice", 3)]
            got = _frames_until(frames, lambda got: len(_timeline_frames(got)) >= 2)
            assert _timeline_frames(got) == new  # oldest first, the earlier one not again
            assert time.monotonic() - started < STREAM_SECONDS
            entry = next(data for event, data in got if event == "timeline")
            assert entry == {"id": new[0], "type": "post", "actor": "alice",
                             "object": "post:2", "payload": {},
                             "created_at": entry["created_at"]}
            assert old not in _timeline_frames(got)
        assert bob.unread_count()["count"] == 0  # the inbox had nothing to say
