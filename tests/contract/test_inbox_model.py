"""The memory store against a SQL store: random inbox histories, compared through public reads.

A Hypothesis state machine publishes events, delivers them (bundling as fan-out does: join
the newest unread group of the bundle, else start one), marks read and unread by id, by match
and by watermark, removes and trims — on both stores at once, with the same times — and after
every step reads both through the ports: pages under several filters, unread counts, group
info, read states and watermarks must be the same. ``TIDINGS_MODEL_EXAMPLES`` sets how many
histories to try (default 20 on SQLite, 5 on the servers).

Each type has the one category and section of its declaration: a SQL store takes them from its
types dictionary when it reads, so the notifications of a type declared again with others follow
it there, where the memory store keeps what each was delivered with (``tests/sql`` checks the
dictionary's side).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from stores import SqlStores
from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.bundling import bundle_hash, display_hash
from tidings.domain.events import Event
from tidings.domain.readstate import Markers, scope_name
from tidings.domain.views import Filters, NewNotification
from tidings.wiring import open_store

T = TypeVar("T")
USERS = ["u1", "u2", "u3"]
ACTORS = ["ann", "bob", "cat"]
# each type's category and section
DEFINITIONS = {"comment": ("social", "message"), "like": ("social", "alert"),
               "notice": ("system", "message")}
TYPES = list(DEFINITIONS)
RULES = ["none", "object", "actor"]
FILTERS = [Filters(), Filters(unread=True), Filters(unread=False), Filters(types=("like",)),
           Filters(category="social", unread=True), Filters(section="message")]

users = st.lists(st.sampled_from(USERS), min_size=1, max_size=3, unique=True)


def deliver(tx: ports.Tx, event_id: int, event: Event, rule: str, category: str,
            section: str, to: list[str], now: int) -> None:
    """What fan-out does for one event, through the ports."""
    bundle = bundle_hash(rule, event.type, event.actor, event.object, event_id)
    fresh = [u for u in to if u not in tx.inbox.delivered(event_id, to)]
    bases = tx.inbox.bundle_bases(fresh, bundle) if rule != "none" else {}
    markers = tx.inbox.load_markers_many(list(bases))
    rows, demote = [], []
    for user in fresh:
        base = bases.get(user)
        group = display_hash(bundle, event_id)
        if base is not None and markers.get(user, Markers()).is_unread(
                base.read_at, base.fresh_at, base.type, base.category, base.section,
                position=(base.created_at, base.event_id)):
            group = base.display_hash  # join the newest group while it is unread
            demote.append((user, group))
        rows.append(NewNotification(user, event_id, now, event.type, category, section,
                                    event.actor, event.object, bundle, group))
    tx.inbox.demote(demote)
    tx.inbox.insert(rows)


class InboxModel(RuleBasedStateMachine):
    """Two stores, one history."""

    databases: SqlStores

    def __init__(self) -> None:
        super().__init__()
        self.clock = FrozenClock()
        self.url = self.databases.clone()
        self.stores = {"memory": open_store("memory://model", self.clock),
                       "sql": open_store(self.url, self.clock)}
        self.events: list[int] = []
        self.deliveries: dict[int, tuple[Event, str, str, str]] = {}

    def teardown(self) -> None:
        for store in self.stores.values():
            store.close()
        self.databases.drop(self.url)

    def both(self, work: Callable[[ports.Tx], T]) -> T:
        """Run the same unit on both stores; they must answer the same."""
        answers = [store.transact(work) for store in self.stores.values()]
        assert answers[0] == answers[1]
        return answers[0]

    def event(self, index: int) -> int:
        return self.events[index % len(self.events)]

    @initialize(to=users, rule_=st.sampled_from(RULES))
    def first_events(self, to: list[str], rule_: str) -> None:
        for n in range(3):
            self.publish_and_deliver(TYPES[n % 2], ACTORS[0], "post:1", rule_, to)

    @rule(type=st.sampled_from(TYPES), actor=st.sampled_from(ACTORS),
          obj=st.sampled_from(["post:1", "post:2"]), rule_=st.sampled_from(RULES), to=users)
    def publish_and_deliver(self, type: str, actor: str, obj: str, rule_: str,
                            to: list[str]) -> None:
        category, section = DEFINITIONS[type]
        event = Event(type=type, actor=actor, object=obj, payload={"n": len(self.events)})
        now = self.clock.now_us()

        def work(tx: ports.Tx) -> int:
            event_id = tx.events.insert(event, json.dumps(dict(event.payload)), now)
            deliver(tx, event_id, event, rule_, category, section, to, now)
            return event_id

        event_id = self.both(work)
        self.events.append(event_id)
        self.deliveries[event_id] = (event, rule_, category, section)

    @rule(index=st.integers(min_value=0, max_value=20), to=users)
    def deliver_again(self, index: int, to: list[str]) -> None:
        """A retried fan-out: already delivered users are skipped."""
        event_id = self.event(index)
        now = self.clock.now_us()

        event, rule_, category, section = self.deliveries[event_id]
        self.both(lambda tx: deliver(tx, event_id, event, rule_, category, section, to, now))

    @rule(user=st.sampled_from(USERS), read=st.booleans(),
          indexes=st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=3))
    def mark_ids(self, user: str, read: bool, indexes: list[int]) -> None:
        chosen = [self.event(i) for i in indexes]
        now = self.clock.now_us()
        self.both(lambda tx: tx.inbox.mark_groups(
            user, tx.inbox.groups_by_ids(user, chosen), read=read, now=now,
            markers=tx.inbox.load_markers(user)))

    @rule(user=st.sampled_from(USERS), actor=st.sampled_from(ACTORS))
    def mark_matching(self, user: str, actor: str) -> None:
        now = self.clock.now_us()
        self.both(lambda tx: tx.inbox.mark_groups(
            user, tx.inbox.groups_by_match(user, actor=actor, type=None, object=None),
            read=True, now=now, markers=tx.inbox.load_markers(user)))

    @rule(user=st.sampled_from(USERS),
          scope=st.sampled_from(["all", "seen", scope_name("type", "like"),
                                 scope_name("category", "social"),
                                 scope_name("section", "message")]),
          back=st.integers(min_value=0, max_value=3))
    def move_watermark(self, user: str, scope: str, back: int) -> None:
        until = self.clock.now_us() - back * 5  # sometimes behind an earlier mark
        self.both(lambda tx: tx.inbox.set_marker(user, scope, until))

    @rule(user=st.sampled_from(USERS), index=st.integers(min_value=0, max_value=20))
    def read_up_to(self, user: str, index: int) -> None:
        """Read up to one of the user's notifications (any place, sometimes behind)."""
        event_id = self.event(index)
        now = self.clock.now_us()

        def work(tx: ports.Tx) -> bool | None:
            place = tx.inbox.position_of(user, event_id)
            return None if place is None else tx.inbox.set_position(user, place, now)

        self.both(work)

    @rule(user=st.sampled_from(USERS), index=st.integers(min_value=0, max_value=20))
    def remove_one(self, user: str, index: int) -> None:
        """One recipient deletes their notification."""
        event_id = self.event(index)
        self.both(lambda tx: tx.inbox.remove(tx.inbox.keys_of(user, [event_id])))

    @rule(index=st.integers(min_value=0, max_value=20))
    def remove_event(self, index: int) -> None:
        event_id = self.event(index)
        self.both(lambda tx: tx.inbox.remove(tx.inbox.keys_for_events([event_id])))

    @rule(user=st.sampled_from(USERS), cap=st.integers(min_value=0, max_value=4))
    def trim(self, user: str, cap: int) -> None:
        self.both(lambda tx: tx.inbox.trim(user, cap))

    @rule(seconds=st.integers(min_value=0, max_value=3))
    def wait(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @precondition(lambda self: bool(self.events))
    @invariant()
    def reads_agree(self) -> None:
        seen = [self._reads(store) for store in self.stores.values()]
        assert seen[0] == seen[1]

    def _reads(self, store: ports.Store) -> dict[str, Any]:
        with store.read() as tx:
            found: dict[str, Any] = {}
            for user in USERS:
                markers = tx.inbox.load_markers(user)
                found[user] = {
                    "markers": markers,
                    "pages": [tx.inbox.page(user, f, markers, limit=50, before=None)
                              for f in FILTERS],
                    "second_page": tx.inbox.page(user, Filters(), markers, limit=2,
                                                 before=_cursor(tx, user)),
                    "counts": [tx.inbox.unread_count(user, f, markers) for f in FILTERS],
                    "view": tx.inbox.page_view(user, Filters(), limit=50, before=None,
                                               bundles=lambda _: True),
                    "groups": tx.inbox.group_info(user, [
                        r.display_hash for r in tx.inbox.page(user, Filters(), markers,
                                                              limit=50, before=None)]),
                    "states": sorted(tx.inbox.read_states(user, self.events),
                                     key=lambda s: s.event_id),
                }
            found["keys"] = sorted(tx.inbox.keys_for_events(self.events),
                                   key=lambda k: (k.user_id, k.event_id))
            return found


def _cursor(tx: ports.Tx, user: str) -> tuple[int, int] | None:
    first = tx.inbox.page(user, Filters(), tx.inbox.load_markers(user), limit=2, before=None)
    return (first[-1].created_at, first[-1].event_id) if first else None


def test_inbox_histories_read_the_same(backend: str, request: pytest.FixtureRequest) -> None:
    InboxModel.databases = request.getfixturevalue(f"{backend}_stores")
    default = 20 if backend == "sqlite" else 5
    examples = int(os.environ.get("TIDINGS_MODEL_EXAMPLES", default))
    run_state_machine_as_test(InboxModel, settings=settings(
        max_examples=examples, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
