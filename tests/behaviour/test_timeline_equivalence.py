"""The three timeline models give identical timelines: the same random history of posts,
follows, unfollows, retractions and per-source overrides, run under push, pull and hybrid
(each on its own store, with a small cap so mailboxes are trimmed and back-fills cut), reads
the same for every user — in full, page by page, and by ``max_id`` / ``since_id`` — and as a
plain model of the history says: the posts of whom the user follows now, newest first."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from engines import on_place, open_tidings
from store_registry import KINDS_BY_NAME
from tidings.clock import FrozenClock
from tidings.engine import Tidings

USERS = ("a", "b", "c", "d")
CAP = 3

ops = st.lists(st.one_of(
    st.tuples(st.just("post"), st.sampled_from(USERS), st.integers(1, 3)),
    st.tuples(st.just("follow"), st.sampled_from(USERS), st.sampled_from(USERS)),
    st.tuples(st.just("unfollow"), st.sampled_from(USERS), st.sampled_from(USERS)),
    st.tuples(st.just("retract"), st.integers(0, 50), st.just(0)),
    st.tuples(st.just("override"), st.sampled_from(USERS),
              st.sampled_from(("push", "pull", None))),
), min_size=1, max_size=25)


@pytest.fixture
def engines(any_backend: str, request: pytest.FixtureRequest) -> Iterator[list[Tidings]]:
    """One engine per model, each on a store of its own of ``any_backend``'s kind."""
    with contextlib.ExitStack() as stack:
        kind = KINDS_BY_NAME[any_backend]
        urls = [stack.enter_context(on_place(stack.enter_context(kind.place(request))))
                for _ in range(3)]
        # hybrid pulls sources with more than one follower
        found = [stack.enter_context(open_tidings(url, clock=FrozenClock(),
                                                  timeline_model=model, timeline_cap=CAP,
                                                  celebrity_followers=1))
                 for url, model in zip(urls, ("push", "pull", "hybrid"), strict=True)]
        yield found


@dataclass
class History:
    """The plain model: who follows whom, every post (actor, object), which are retracted."""

    follows: set[tuple[str, str]] = field(default_factory=set)
    posts: list[tuple[str, str]] = field(default_factory=list)
    retracted: set[str] = field(default_factory=set)

    def timeline(self, user: str) -> list[str]:
        return [obj for actor, obj in reversed(self.posts)
                if (user, actor) in self.follows and obj not in self.retracted]


def _objects(t: Tidings, user: str, limit: int = 100, **kw: Any) -> list[str]:
    return [str(e.object) for e in t.timeline(user, limit=limit, **kw).items]


def _walk(t: Tidings, user: str, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = t.timeline(user, limit=limit, cursor=cursor)
        seen += [str(e.object) for e in page.items]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(history=ops)
def test_push_pull_and_hybrid_read_the_same(engines: list[Tidings],
                                            history: list[tuple[Any, Any, Any]]) -> None:
    run = secrets.token_hex(3)  # users of this example only: the stores are shared
    user = {u: f"{u}{run}" for u in USERS}
    model = History()
    for op, x, y in history:
        if op == "post":
            for _ in range(y):
                obj = f"blog:{run}:{len(model.posts)}"
                model.posts.append((x, obj))
                for t in engines:
                    t.publish({"type": "post", "actor": user[x], "object": obj})
        elif op in ("follow", "unfollow") and x != y:
            for t in engines:
                getattr(t, op)(user[x], user[y])
            if op == "follow":
                model.follows.add((x, y))
            else:
                model.follows.discard((x, y))
        elif op == "retract" and model.posts:
            obj = model.posts[x % len(model.posts)][1]
            model.retracted.add(obj)
            for t in engines:
                t.retract(type="post", object=obj)
        elif op == "override":
            for t in engines:
                t.set_timeline_model(user[x], y)
        for t in engines:
            t.run_jobs()
    for u in USERS:
        want = model.timeline(u)
        for t in engines:
            assert _objects(t, user[u]) == want, (t.config.timeline_model, u)
            assert _walk(t, user[u], 2) == want
        if len(want) >= 3:
            first = engines[0].timeline(user[u], limit=100).items
            middle = [str(e.object) for e in first[1:-1]]
            for t in engines:
                ids = [e.id for e in t.timeline(user[u], limit=100).items]
                assert _objects(t, user[u], max_id=ids[0], since_id=ids[-1]) == middle
