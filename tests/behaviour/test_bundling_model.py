"""Bundling checked against a plain in-memory model (a Hypothesis state machine).

Random sequences of publish, read, mark-all-read, mark-unread, retract and page-through must give
the same items, counts, titles, read flags and base rows on every store as the model does.
Every example runs on the test's one store with a reader and actors of its own, so examples never
see each other's notifications.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from engines import keys_of, open_tidings
from tidings.clock import FrozenClock
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.domain.views import Filters

ACTORS = ["ann", "ben", "cat", "dan"]
OBJECTS = ["page:A", "page:B"]
TYPES = [
    EventType(name="link", bundle="object", audience=("recipients",),
              templates=Templates(title="{{ object_title }} linked by {{ actors_text }}")),
    EventType(name="thanks", bundle="actor", audience=("recipients",),
              templates=Templates(title="{{ actors_text }} thanked you ({{ count }})")),
    EventType(name="mention", bundle="none", audience=("recipients",),
              templates=Templates(title="{{ actor }} mentioned you on {{ object_title }}")),
]
RULES = {t.name: t.bundle for t in TYPES}


@dataclass
class Member:
    event_id: int
    actor: str
    type: str
    object: str
    at: int
    fresh: int
    read: bool = False


@dataclass
class Group:
    hash: tuple[str, ...]
    members: list[Member] = field(default_factory=list)  # oldest first

    @property
    def base(self) -> Member:
        return self.members[-1]


class Model:
    """What a user should see: display groups of notifications, newest first."""

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.watermark = 0

    def unread(self, group: Group) -> bool:
        return not group.base.read and group.base.fresh > self.watermark

    def deliver(self, member: Member) -> None:
        rule = RULES[member.type]
        key: tuple[str, ...] = {
            "object": ("object", member.type, member.object),
            "actor": ("actor", member.type, member.actor),
            "none": ("event", str(member.event_id)),
        }[rule]
        same = [g for g in self.groups if g.hash == key]
        if same:
            newest = max(same, key=lambda g: (g.base.at, g.base.event_id))
            if self.unread(newest):
                newest.members.append(member)
                return
        self.groups.append(Group(key, [member]))

    def listed(self) -> list[Group]:
        return sorted(self.groups, key=lambda g: (g.base.at, g.base.event_id), reverse=True)

    def find(self, event_id: int) -> Group:
        return next(g for g in self.groups if any(m.event_id == event_id for m in g.members))

    def retract(self, actor: str) -> int:
        removed = 0
        for group in self.groups:
            before = len(group.members)
            group.members = [m for m in group.members if m.actor != actor]
            removed += before - len(group.members)
        self.groups = [g for g in self.groups if g.members]
        return removed

    def title(self, group: Group) -> str:
        actors: list[str] = []
        for member in reversed(group.members):
            if member.actor not in actors:
                actors.append(member.actor)
        others = min(len(actors) - 1, 99)
        text = actors[0] if others == 0 else (
            f"{actors[0]} and 1 other" if others == 1 else f"{actors[0]} and {others} others")
        base = group.base
        if base.type == "link":
            return f"{base.object.split(':')[1]} linked by {text}"
        if base.type == "thanks":
            return f"{text} thanked you ({len(group.members)})"
        return f"{base.actor} mentioned you on {base.object.split(':')[1]}"


class BundlingMachine(RuleBasedStateMachine):
    url = ""
    examples = 0

    def __init__(self) -> None:
        super().__init__()
        BundlingMachine.examples += 1
        self.user = f"reader{self.examples}"
        self.suffix = str(self.examples)  # of the actors' ids
        self.clock = FrozenClock()
        self.t = open_tidings(self.url, types=tuple(TYPES), clock=self.clock)
        self.published: list[int] = []
        self.model = Model()

    def teardown(self) -> None:
        self.t.close()

    @rule(actor=st.sampled_from(ACTORS), obj=st.sampled_from(OBJECTS),
          type=st.sampled_from([t.name for t in TYPES]))
    def publish(self, actor: str, obj: str, type: str) -> None:
        actor += self.suffix
        published = self.t.publish(Event(type, actor=actor, object=obj, recipients=[self.user]))
        event_id = int(published.id)
        self.published.append(event_id)
        # the delivery time is the clock's next tick, taken inside the fan-out job
        self.t.run_jobs()
        with self.t.store.read() as tx:
            (newest,) = tx.inbox.page(self.user, Filters(), tx.inbox.load_markers(self.user),
                                      limit=1, before=None)
        assert newest.event_id == event_id
        self.model.deliver(Member(event_id, actor, type, obj, newest.created_at,
                                  newest.created_at))

    @rule(index=st.integers(0, 30))
    def read_one(self, index: int) -> None:
        listed = self.model.listed()
        if not listed:
            return
        group = listed[index % len(listed)]
        self.t.mark_read(self.user, [str(group.base.event_id)])
        for member in group.members:
            member.read = True

    @rule(index=st.integers(0, 30))
    def unread_one(self, index: int) -> None:
        listed = self.model.listed()
        if not listed:
            return
        group = listed[index % len(listed)]
        self.t.mark_unread(self.user, [str(group.members[0].event_id)])
        with self.t.store.read() as tx:
            (base,) = tx.inbox.read_states(self.user, [group.base.event_id])
        fresh = base.fresh_at
        for member in group.members:
            member.read = False
            member.fresh = fresh

    @rule()
    def mark_all_read(self) -> None:
        self.t.mark_all_read(self.user)
        with self.t.store.read() as tx:
            self.model.watermark = tx.inbox.load_markers(self.user).all

    @rule(actor=st.sampled_from(ACTORS))
    def retract(self, actor: str) -> None:
        actor += self.suffix
        assert self.t.retract(actor=actor) == self.model.retract(actor)

    @rule(page=st.integers(1, 4))
    def page_through(self, page: int) -> None:
        seen: list[str] = []
        cursor = None
        while True:
            result = self.t.notifications(self.user, limit=page, cursor=cursor)
            seen += [item.id for item in result.items]
            cursor = result.next_cursor
            if cursor is None:
                break
        assert seen == [str(g.base.event_id) for g in self.model.listed()]

    @invariant()
    def inbox_matches_model(self) -> None:
        items = self.t.notifications(self.user, limit=100).items
        expected = self.model.listed()
        assert [i.id for i in items] == [str(g.base.event_id) for g in expected]
        assert [i.count for i in items] == [len(g.members) for g in expected]
        assert [i.read for i in items] == [not self.model.unread(g) for g in expected]
        assert [i.title for i in items] == [self.model.title(g) for g in expected]
        unread = sum(1 for g in expected if self.model.unread(g))
        assert self.t.unread_count(self.user).count == min(unread, 100)

    @invariant()
    def one_base_per_group(self) -> None:
        keys = keys_of(self.t, self.published)
        assert {k.user_id for k in keys} <= {self.user}
        groups: dict[str, int] = {}
        for key in keys:
            groups[key.display_hash] = groups.get(key.display_hash, 0) + int(key.bundle_base)
        assert all(count == 1 for count in groups.values()), groups


@pytest.mark.slow
def test_bundles_match_the_model(any_store_url: str) -> None:
    BundlingMachine.url = any_store_url
    run_state_machine_as_test(BundlingMachine, settings=settings(
        max_examples=25, stateful_step_count=25, deadline=None,
        suppress_health_check=list(HealthCheck)))
