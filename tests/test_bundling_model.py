"""Bundling checked against a plain in-memory model (a Hypothesis state machine).

Random sequences of publish, read, mark-all-read, mark-unread, retract and page-through must give
the same items, counts, titles, read flags and base rows on every backend as the model does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from sqlalchemy import delete, select

from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.store.sql.schema import metadata, notifications

USER = "reader"
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

    def __init__(self) -> None:
        super().__init__()
        self.clock = FrozenClock()
        self.t = Tidings(Config(database_url=self.url), types=TYPES, clock=self.clock,
                         pool_size=1)
        with self.t.store.db.write() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(delete(table))
        self.model = Model()

    def teardown(self) -> None:
        self.t.close()

    @rule(actor=st.sampled_from(ACTORS), obj=st.sampled_from(OBJECTS),
          type=st.sampled_from([t.name for t in TYPES]))
    def publish(self, actor: str, obj: str, type: str) -> None:
        published = self.t.publish(Event(type, actor=actor, object=obj, recipients=[USER]))
        # the delivery time is the clock's next tick, taken inside the fan-out job
        self.t.run_jobs()
        with self.t.store.db.read() as conn:
            at = conn.execute(select(notifications.c.created_at).where(
                notifications.c.event_id == int(published.id))).scalar_one()
        self.model.deliver(Member(int(published.id), actor, type, obj, at, at))

    @rule(index=st.integers(0, 30))
    def read_one(self, index: int) -> None:
        listed = self.model.listed()
        if not listed:
            return
        group = listed[index % len(listed)]
        self.t.mark_read(USER, [str(group.base.event_id)])
        for member in group.members:
            member.read = True

    @rule(index=st.integers(0, 30))
    def unread_one(self, index: int) -> None:
        listed = self.model.listed()
        if not listed:
            return
        group = listed[index % len(listed)]
        self.t.mark_unread(USER, [str(group.members[0].event_id)])
        with self.t.store.db.read() as conn:
            fresh = conn.execute(select(notifications.c.fresh_at).where(
                notifications.c.user_id == USER,
                notifications.c.event_id == group.base.event_id)).scalar_one()
        for member in group.members:
            member.read = False
            member.fresh = fresh

    @rule()
    def mark_all_read(self) -> None:
        self.t.mark_all_read(USER)
        with self.t.store.read() as tx:
            self.model.watermark = tx.inbox.load_markers(USER).all

    @rule(actor=st.sampled_from(ACTORS))
    def retract(self, actor: str) -> None:
        assert self.t.retract(actor=actor) == self.model.retract(actor)

    @rule(page=st.integers(1, 4))
    def page_through(self, page: int) -> None:
        seen: list[str] = []
        cursor = None
        while True:
            result = self.t.notifications(USER, limit=page, cursor=cursor)
            seen += [item.id for item in result.items]
            cursor = result.next_cursor
            if cursor is None:
                break
        assert seen == [str(g.base.event_id) for g in self.model.listed()]

    @invariant()
    def inbox_matches_model(self) -> None:
        items = self.t.notifications(USER, limit=100).items
        expected = self.model.listed()
        assert [i.id for i in items] == [str(g.base.event_id) for g in expected]
        assert [i.count for i in items] == [len(g.members) for g in expected]
        assert [i.read for i in items] == [not self.model.unread(g) for g in expected]
        assert [i.title for i in items] == [self.model.title(g) for g in expected]
        unread = sum(1 for g in expected if self.model.unread(g))
        assert self.t.unread_count(USER).count == min(unread, 100)

    @invariant()
    def one_base_per_group(self) -> None:
        with self.t.store.db.read() as conn:
            rows = conn.execute(select(notifications.c.display_hash,
                                       notifications.c.bundle_base)).all()
        groups: dict[str, int] = {}
        for row in rows:
            groups[row.display_hash] = groups.get(row.display_hash, 0) + int(bool(row.bundle_base))
        assert all(count == 1 for count in groups.values()), groups


@pytest.mark.slow
def test_bundles_match_the_model(store_url: str) -> None:
    BundlingMachine.url = store_url
    run_state_machine_as_test(BundlingMachine, settings=settings(
        max_examples=25, stateful_step_count=25, deadline=None,
        suppress_health_check=list(HealthCheck)))
