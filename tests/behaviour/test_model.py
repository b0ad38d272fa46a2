"""A Hypothesis state machine: the same publishes, marks, deletions and retractions on an
engine on SQLite alone and on one with its hot parts in Redis (and Redis Cluster); after
every step each user's inbox (every page, with and without filters) and unread counts must
read the same through the public API."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from engines import open_tidings
from redis_servers import delete_prefix
from stores import SqlStores
from tidings.clock import FrozenClock
from tidings.domain.types import EventType
from tidings.engine import Tidings

USERS = ["ann", "bob", "cat"]
ACTORS = ["dan", "eve", "ann"]
OBJECTS = ["page:A", "page:B"]
TYPES = ["page-linked", "mention", "message", "review"]
# a type with a queryable payload field, declared on both engines
REVIEW = EventType(name="review", bundle="object", audience=("recipients",),
                   queryable=("tag",))
VIEWS: list[dict[str, Any]] = [
    {}, {"unread": True}, {"unread": False}, {"types": ["page-linked"]}, {"actor": "dan"},
    {"object": "page:A"}, {"section": "message"}, {"since_id": 2}, {"max_id": 4},
    {"payload": {"tag": "x"}}, {"payload": {"tag": "y"}, "unread": True},
]

users = st.sampled_from(USERS)
actors = st.sampled_from(ACTORS)
objects = st.sampled_from(OBJECTS)
kinds = st.sampled_from(TYPES)


def make_machine(open_pair: Callable[[], tuple[Tidings, Tidings, Callable[[], None]]]
                 ) -> type[RuleBasedStateMachine]:
    class SameInbox(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.sql, self.hot, self.cleanup = open_pair()
            self.engines = (self.sql, self.hot)
            for t in self.engines:
                t.define_type(REVIEW)

        def teardown(self) -> None:
            self.cleanup()

        def both(self, call: Callable[[Tidings], Any]) -> Any:
            answers = [call(t) for t in self.engines]
            assert answers[0] == answers[1]
            return answers[0]

        def tick(self, microseconds: int = 1_000_000) -> None:
            for t in self.engines:
                assert isinstance(t.clock, FrozenClock)
                t.clock.advance(microseconds / 1_000_000)

        def ids_of(self, user: str) -> list[str]:
            return [n.id for n in self.sql.notifications(user, limit=100).items]

        @rule(kind=kinds, actor=actors, obj=objects, told=st.sets(users, min_size=1),
              tag=st.sampled_from(["x", "y"]))
        def publish(self, kind: str, actor: str, obj: str, told: set[str], tag: str) -> None:
            event = {"type": kind, "actor": actor, "object": obj, "recipients": sorted(told),
                     "payload": {"tag": tag}}
            self.both(lambda t: t.publish(event).id)
            self.both(lambda t: t.run_jobs())
            self.tick()

        @rule(user=users, read=st.booleans(), data=st.data())
        def mark(self, user: str, read: bool, data: st.DataObject) -> None:
            ids = self.ids_of(user)
            if not ids:
                return
            chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3))
            self.both(lambda t: t.mark_read(user, chosen) if read
                      else t.mark_unread(user, chosen))
            self.tick()

        @rule(user=users, kind=st.none() | kinds)
        def mark_all_read(self, user: str, kind: str | None) -> None:
            self.both(lambda t: t.mark_all_read(user, types=[kind] if kind else None))
            self.tick()

        @rule(user=users, actor=st.none() | actors, obj=st.none() | objects)
        def mark_matching(self, user: str, actor: str | None, obj: str | None) -> None:
            if actor is None and obj is None:
                return
            self.both(lambda t: t.mark_read_matching(user, actor=actor, object=obj))
            self.tick()

        @rule(user=users, actor=actors, kind=kinds)
        def delete_for_one(self, user: str, actor: str, kind: str) -> None:
            self.both(lambda t: t.delete_notifications(user, actor=actor, type=kind))

        @rule(actor=actors, obj=objects)
        def retract(self, actor: str, obj: str) -> None:
            self.both(lambda t: t.retract(actor=actor, object=obj))

        @invariant()
        def inboxes_read_the_same(self) -> None:
            for user in USERS:
                for view in VIEWS:
                    pages: list[list[list[dict[str, Any]]]] = [[], []]
                    for n, t in enumerate(self.engines):
                        cursor = None
                        while True:
                            page = t.notifications(user, limit=2, cursor=cursor, **view)
                            pages[n].append([item.to_dict() for item in page.items])
                            cursor = page.next_cursor
                            if cursor is None:
                                break
                    assert pages[0] == pages[1], (user, view)
                self.both(lambda t, u=user: t.unread_count(u))
                self.both(lambda t, u=user: t.unread_count(u, types=["mention"]))
                self.both(lambda t, u=user: t.unread_count(u, payload={"tag": "x"}))

    return SameInbox


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_the_redis_inbox_reads_as_the_sql_one(kind: str, request: pytest.FixtureRequest,
                                              sqlite_stores: SqlStores,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    server = (request.getfixturevalue("redis_cluster").url if kind == "cluster"
              else request.getfixturevalue("redis_server"))

    def open_pair() -> tuple[Tidings, Tidings, Callable[[], None]]:
        plain_url, hot_sql_url = sqlite_stores.clone(), sqlite_stores.clone()
        prefix = f"m{secrets.token_hex(5)}:"
        plain = open_tidings(plain_url, clock=FrozenClock())
        hot = open_tidings(hot_sql_url, clock=FrozenClock(),
                           hot_store_url=f"{server}?prefix={prefix}")

        def cleanup() -> None:
            plain.close()
            hot.close()
            sqlite_stores.drop(plain_url)
            sqlite_stores.drop(hot_sql_url)
            delete_prefix(server, prefix)

        return plain, hot, cleanup

    run_state_machine_as_test(
        make_machine(open_pair),
        settings=settings(max_examples=12, stateful_step_count=14, deadline=None,
                          suppress_health_check=list(HealthCheck)))
