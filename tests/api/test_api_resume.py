"""Streams that resume and reads that answer 304: every event of ``/stream`` has an ``id:``; a
client reconnecting with it as ``Last-Event-ID`` gets exactly what it missed (up to
:data:`~tidings.api.resume.REPLAY_BOUND`, beyond it one ``resync``); the inbox list and the
unread count carry an ``ETag`` and answer ``If-None-Match`` with 304. Through a real server
with real sockets, on SQLite, PostgreSQL and SQLite with its hot store on Redis."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from redis_servers import hot_url_of
from servers import LiveServer, start, wait_for
from stores import SqlStores
from tidings.api import resume
from tidings.client import Client, SseEvent

pytest_plugins = ["servers"]

Frame = tuple[str | None, str, Any]  # (id, event, data)


@pytest.fixture(params=["sqlite", "postgresql", "redis"])
def server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """A server whose jobs the test runs itself (``tidings.run_jobs()``), so what a stream
    missed is known exactly."""
    kind: str = request.param
    stores: SqlStores = request.getfixturevalue(
        "postgresql_stores" if kind == "postgresql" else "sqlite_stores")
    url = stores.clone()
    with contextlib.ExitStack() as stack:
        config = ({"hot_store_url": stack.enter_context(hot_url_of("redis", request))}
                  if kind == "redis" else {})
        yield start(stack, url, config=config, run_worker=False)
    stores.drop(url)


class Frames:
    """The events of one open stream, read as they come (``id``, ``event``, JSON ``data``)."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.iter_lines()

    def next(self) -> Frame:
        id_: str | None = None
        event, data = "", ""
        for line in self.lines:
            if not line:
                if data:
                    return id_, event, json.loads(data)
                id_, event = None, ""  # a frame with no data (retry:, a keepalive)
            elif line.startswith("id: "):
                id_ = line[4:]
            elif line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        raise AssertionError("the stream ended")

    def until(self, done: Callable[[Frame], bool]) -> list[Frame]:
        """The frames up to and with the first for which ``done`` holds."""
        frames = [self.next()]
        while not done(frames[-1]):
            frames.append(self.next())
        return frames


@contextlib.contextmanager
def stream(live: LiveServer, user: str, last_event_id: str | None = None
           ) -> Iterator[Frames]:
    headers = {"Authorization": f"Bearer {live.token(user)}"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    with httpx.Client(base_url=live.base_url, timeout=httpx.Timeout(10.0)) as http, \
            http.stream("GET", "/v1/me/stream", headers=headers) as response:
        assert response.status_code == 200, response.read()
        yield Frames(response)


def mention(live: LiveServer, user: str, n: int) -> str:
    return live.tidings.publish({"type": "mention", "actor": "carol", "recipients": [user],
                                 "object": f"page:{n}"}).id


def is_unread(frame: Frame) -> bool:
    return frame[1] == "unread"


def test_a_reconnecting_stream_gets_exactly_what_it_missed(server: LiveServer) -> None:
    t = server.tidings
    t.follow("bob", "alice")
    t.subscribe("bob", "page-linked", "page:Rome")
    before = mention(server, "bob", 0)
    t.publish({"type": "page-linked", "actor": "alice", "object": "page:Rome"})
    t.run_jobs()
    with stream(server, "bob") as frames:
        first = frames.next()
    assert first[1] == "unread" and first[2]["count"] == 2 and first[0]
    # away: two mentions, a post of alice's (inbox and timeline), a second link that
    # joins the bundle (which moves up, shown by its newest member)
    missed = [mention(server, "bob", 1), mention(server, "bob", 2)]
    post = t.publish({"type": "post", "actor": "alice", "object": "post:1"}).id
    linked = t.publish({"type": "page-linked", "actor": "dave", "object": "page:Rome"}).id
    t.run_jobs()

    with stream(server, "bob", first[0]) as frames:
        replayed = frames.until(is_unread)
        marker = mention(server, "bob", 3)
        t.run_jobs()
        after = frames.until(lambda f: f[1] == "notification" and f[2]["id"] == marker)
    assert [(event, data["id"]) for _, event, data in replayed[:-1]] == [
        ("notification", missed[0]), ("notification", missed[1]),
        ("notification", post), ("notification", linked)]
    assert replayed[-2][2]["count"] == 2  # the bundle, with both links
    assert replayed[-1][2]["count"] == 5
    timeline = [(event, data["id"]) for _, event, data in after if event == "timeline"]
    assert timeline == [("timeline", post)]
    assert before not in {data.get("id") for _, _, data in replayed + after}
    ids = [frame[0] for frame in replayed + after]
    assert all(ids) and len(set(ids)) >= 5

    # from the last id: nothing again, and what comes next comes live
    with stream(server, "bob", after[-1][0]) as frames:
        assert frames.next()[1] == "unread"
        fresh = mention(server, "bob", 4)
        t.run_jobs()
        assert [f[2]["id"] for f in frames.until(
            lambda f: f[1] == "notification") if f[1] != "unread"] == [fresh]


def test_more_missed_than_the_bound_is_one_resync(server: LiveServer) -> None:
    t = server.tidings
    with stream(server, "bob") as frames:
        first = frames.next()
    assert first[2]["count"] == 0
    for n in range(resume.REPLAY_BOUND + 1):
        mention(server, "bob", n)
    t.run_jobs()
    with stream(server, "bob", first[0]) as frames:
        got = frames.until(is_unread)
    assert [(event, data) for _, event, data in got[:-1]] == [
        ("resync", {"notifications": True, "timeline": False})]
    resynced = got[0][0]
    assert resynced is not None and resynced != first[0]
    # the resync's id is where the lists are now: resuming from it replays nothing
    with stream(server, "bob", resynced) as frames:
        assert frames.next()[1] == "unread"
        fresh = mention(server, "bob", 999)
        t.run_jobs()
        live = frames.until(lambda f: f[1] == "notification")
        assert [f[2]["id"] for f in live if f[1] != "unread"] == [fresh]


@pytest.mark.parametrize("header", ["nonsense", "1-2", "1-2-3-4", "-1-2-3",
                                    f"{10**19}-1-1", "01-2-3"])
def test_a_last_event_id_no_stream_sent_is_a_clear_400(shared_live: LiveServer,
                                                       header: str) -> None:
    with shared_live.http(shared_live.token("bob")) as http:
        answer = http.get("/v1/me/stream", headers={"Last-Event-ID": header})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_last_event_id"
    assert "Last-Event-ID" in answer.json()["error"]["message"]


POLLED = [
    "/v1/users/bob/notifications",  # the hot reads (api/hotreads.py)
    "/v1/users/bob/notifications?limit=5",
    "/v1/users/bob/notifications/unread-count",
    "/v1/users/bob/notifications?unread=true",  # the FastAPI routes
    "/v1/users/bob/notifications/unread-count?types=mention",
    "/v1/me/notifications",
]


def test_lists_and_counts_answer_304_until_they_change(server: LiveServer) -> None:
    mention(server, "bob", 1)
    server.tidings.run_jobs()
    with server.http(server.token("bob")) as http:
        first = {path: http.get(path) for path in POLLED}
        tags = {path: answer.headers["etag"] for path, answer in first.items()}
        assert all(a.status_code == 200 for a in first.values())
        assert all(tag.startswith('"') and len(tag) > 8 for tag in tags.values())
        for path, tag in tags.items():
            for sent in (tag, f"W/{tag}", f'"other", {tag}', "*"):
                again = http.get(path, headers={"If-None-Match": sent})
                assert (again.status_code, again.content, again.headers["etag"]) == (
                    304, b"", tag), (path, sent)
            assert http.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
        mention(server, "bob", 2)
        server.tidings.run_jobs()
        for path, tag in tags.items():
            changed = http.get(path, headers={"If-None-Match": tag})
            assert changed.status_code == 200 and changed.headers["etag"] != tag, path
            assert changed.json() != first[path].json()


class CuttingProxy:
    """A TCP proxy on loopback in front of a server, whose open connections a test can cut
    (as a network that drops them would), while it goes on accepting new ones."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.open: list[socket.socket] = []
        self.accepted = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self.open += [client, upstream]
                self.accepted += 1
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self._lock:
            cut, self.open = self.open, []
        for sock in cut:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self.listener.close()
        self.cut()


@pytest.mark.parametrize("api_backend", ["sqlite"])
def test_the_client_reconnects_and_resumes(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(run_worker=False)
    proxy = CuttingProxy(live.base_url)
    got: list[SseEvent] = []

    def read(client: Client) -> None:
        with contextlib.closing(client.stream(timeout=15)) as events:
            for event in events:
                got.append(event)
                if sum(e.event == "notification" for e in got) == 2:
                    return

    try:
        with Client(proxy.url, live.token("bob")) as client:
            reader = threading.Thread(target=read, args=(client,), daemon=True)
            reader.start()
            assert wait_for(lambda: got, 5)
            proxy.cut()
            missed = [mention(live, "bob", n) for n in range(2)]
            live.tidings.run_jobs()
            reader.join(10)
            assert not reader.is_alive()
    finally:
        proxy.close()
    assert proxy.accepted == 2  # one reconnection, which the server answered from the id
    assert [e.data["id"] for e in got if e.event == "notification"] == missed
    assert all(e.id for e in got)


@pytest.mark.parametrize("api_backend", ["sqlite"])
def test_deleting_the_newest_item_announces_no_older_one(
        start_server: Callable[..., LiveServer]) -> None:
    live = start_server(run_worker=False)
    older, newest = mention(live, "bob", 1), mention(live, "bob", 2)
    live.tidings.run_jobs()
    with stream(live, "bob") as frames:
        assert frames.next()[2]["count"] == 2
        live.tidings.delete_notification("bob", newest)
        assert [(event, data["count"]) for _, event, data in frames.until(is_unread)] == [
            ("unread", 1)]
        latest = mention(live, "bob", 3)
        live.tidings.run_jobs()
        got = frames.until(lambda f: f[1] == "notification")
    assert [data["id"] for _, event, data in got if event == "notification"] == [latest]
    assert older != latest


@pytest.mark.parametrize("api_backend", ["sqlite"])
def test_an_id_ahead_of_the_inbox_still_hears_what_comes_next(
        start_server: Callable[..., LiveServer]) -> None:
    """A client whose newest items were deleted since (or whose id came from a clock ahead
    of the server's) goes on from the inbox's newest item, not from its own id."""
    live = start_server(run_worker=False)
    with stream(live, "bob", f"{2**62}-{2**40}-0") as frames:
        assert frames.next()[1] == "unread"
        latest = mention(live, "bob", 1)
        live.tidings.run_jobs()
        got = frames.until(lambda f: f[1] == "notification")
    assert [data["id"] for _, event, data in got if event == "notification"] == [latest]


@pytest.mark.parametrize("api_backend", ["sqlite"])
def test_the_timeline_is_replayed_in_full_up_to_the_bound(
        start_server: Callable[..., LiveServer]) -> None:
    """More posts than a stream's look (20) are all replayed, oldest first; more than the
    bound is one resync naming the timeline only (bob reads posts on his timeline alone)."""
    live = start_server(run_worker=False)
    t = live.tidings
    t.follow("bob", "alice")
    t.set_preferences("bob", {"channels": {"post": {"web": False}}})
    with stream(live, "bob") as frames:
        first = frames.next()

    def posts(n: int, start: int) -> list[str]:
        made = [t.publish({"type": "post", "actor": "alice", "object": f"post:{start + i}"}).id
                for i in range(n)]
        t.run_jobs()
        return made

    missed = posts(25, 0)
    with stream(live, "bob", first[0]) as frames:
        got = frames.until(lambda f: f[1] == "timeline" and f[2]["id"] == missed[-1])
    assert [data["id"] for _, event, data in got if event == "timeline"] == missed
    assert [event for _, event, _ in got if event != "timeline"] == ["unread"]
    posts(resume.REPLAY_BOUND + 1, 100)
    with stream(live, "bob", got[-1][0]) as frames:
        resynced = frames.until(is_unread)
    assert [(event, data) for _, event, data in resynced[:-1]] == [
        ("resync", {"notifications": False, "timeline": True})]
