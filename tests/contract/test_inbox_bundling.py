"""The bundling rule, one definition: random sequences of deliveries (live and back-filled,
alone and several in one ``deliver_many``, again to users who hold them already), reads of a
group and "mark all read" give on every store — memory and SQL, which apply
:class:`tidings.domain.bundling.Bundler` over the port's primitives, and Redis (local and
Cluster), which applies it server-side in Lua — the groups the domain's rule gives when it is
applied one delivery at a time to a plain model of the rows (each example with users of its
own), and the reasons its rows keep (a row that joins a group: the more personal of its own
and the base's)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import hypothesis.strategies as st
from contract_kit import read, write
from hypothesis import HealthCheck, given, settings

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.bundling import Bundler, bundle_hash
from tidings.domain.events import Event
from tidings.domain.flags import REASONS, reason_code
from tidings.domain.readstate import Markers
from tidings.domain.views import BundleBase, Delivery

USERS = ("u0", "u1", "u2")
RULES = {"like": "object", "thanks": "actor", "mention": "none"}
EXAMPLES = itertools.count()


@dataclass(frozen=True)
class Send:
    """One event to deliver: its type, actor, object, users, and how far back it is dated
    (0: live; else a back-fill that many milliseconds before now)."""

    type: str
    actor: str
    object: str
    users: frozenset[str]
    back: int
    reasons: tuple[int, ...]  # each of USERS' reason code (0: none kept), in their order


@dataclass
class Row:
    created: int
    fresh: int
    bundle: str
    display: str
    base: bool
    read: bool = False
    flags: int = 0


SENDS = st.builds(Send, st.sampled_from(sorted(RULES)), st.sampled_from(["ann", "ben"]),
                  st.sampled_from(["page:A", "page:B"]),
                  st.frozensets(st.sampled_from(USERS), min_size=1),
                  st.sampled_from([0, 0, 0, 2, 7]),
                  st.tuples(*[st.integers(0, len(REASONS))] * len(USERS)))
STEPS = st.lists(st.one_of(
    st.tuples(st.just("deliver"), st.lists(SENDS, min_size=1, max_size=3)),
    st.tuples(st.just("again"), st.integers(0, 20)),
    st.tuples(st.just("read_newest"), st.sampled_from(USERS)),
    st.tuples(st.just("read_all"), st.sampled_from(USERS)),
), min_size=1, max_size=10)


class Model:
    """Every user's rows, and the domain's rule applied to them one delivery at a time."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[int, Row]] = {}
        self.read_all: dict[str, int] = {}

    def deliver(self, d: Delivery, users: list[str]) -> list[str]:
        fresh = [u for u in sorted(set(users)) if d.event_id not in self.rows.get(u, {})]
        before = (d.created_at, d.event_id) if d.backfill else None
        bases = {(u, d.bundle_hash): b for u in fresh
                 if d.bundled and (b := self._base(u, d.bundle_hash, before)) is not None}
        markers = {u: Markers(all=self.read_all.get(u, 0)) for u in fresh}
        decided = Bundler(bases, markers).decide(d, fresh)
        for user, group in decided.demoted:
            for row in self.rows[user].values():
                if row.display == group:
                    row.base = False
        for new in decided.rows:
            self.rows.setdefault(new.user_id, {})[new.event_id] = Row(
                new.created_at, new.fresh_at, new.bundle_hash, new.display_hash, True,
                flags=new.flags)
        return fresh

    def _base(self, user: str, bundle: str, before: tuple[int, int] | None
              ) -> BundleBase | None:
        found = [(r.created, e, r) for e, r in self.rows.get(user, {}).items()
                 if r.base and r.bundle == bundle and (before is None or (r.created, e) < before)]
        if not found:
            return None
        created, event_id, row = max(found, key=lambda f: (f[0], f[1]))
        return BundleBase(user_id=user, event_id=event_id, display_hash=row.display,
                          created_at=created, fresh_at=row.fresh,
                          read_at=1 if row.read else None, type="t", category="c",
                          section="s", flags=row.flags)

    def newest_group(self, user: str) -> str | None:
        bases = [(r.created, e, r.display) for e, r in self.rows.get(user, {}).items() if r.base]
        return max(bases)[2] if bases else None

    def read_group(self, user: str, group: str) -> None:
        for row in self.rows[user].values():
            if row.display == group:
                row.read = True

    def groups(self, user: str) -> dict[int, tuple[str, bool, int, int]]:
        return {e: (r.display, r.base, r.created, r.flags)
                for e, r in self.rows.get(user, {}).items()}


def _stored(store: ports.Store, users: list[str], events: list[int]
            ) -> dict[str, dict[int, tuple[str, bool, int, int]]]:
    def work(tx: ports.Tx) -> dict[str, dict[int, tuple[str, bool, int, int]]]:
        out: dict[str, dict[int, tuple[str, bool, int, int]]] = {}
        for user in users:
            mine: dict[int, tuple[str, bool, int, int]] = {}
            for key in tx.inbox.keys_of(user, events):
                place = tx.inbox.position_of(user, key.event_id)
                assert place is not None
                # the row's flags (why it arrived; on a join, the group's most personal)
                members = tx.inbox.members(user, key.event_id, limit=100, before=None) or []
                (flags,) = [m.flags for m in members if m.event_id == key.event_id]
                mine[key.event_id] = (key.display_hash, key.bundle_base, place[0], flags)
            out[user] = mine
        return out
    return read(store, work)


def _deliver(store: ports.Store, model: Model, users: dict[str, str], sends: list[Send],
             now: int) -> list[tuple[Delivery, list[str]]]:
    """The events of ``sends`` stored and delivered in one unit (``deliver_many``)."""
    def work(tx: ports.Tx) -> tuple[list[tuple[Delivery, list[str]]], list[list[str]]]:
        items = []
        for send in sends:
            created = now - send.back * 1000
            event_id = tx.events.insert(Event(
                type=send.type, actor=send.actor, object=send.object, payload={},
                created_at=created), "{}", now)
            rule = RULES[send.type]
            items.append((Delivery(
                event_id=event_id, created_at=created, type=send.type, category=send.type,
                section="alert", actor=send.actor, object=send.object, bundled=rule != "none",
                bundle_hash=bundle_hash(rule, send.type, send.actor, send.object, event_id),
                backfill=send.back > 0, delivered_at=now,
                reasons={users[u]: reason_code(REASONS[r - 1]) if r else 0
                         for u, r in zip(USERS, send.reasons, strict=True)}),
                sorted(users[u] for u in send.users)))
        return items, tx.inbox.deliver_many(items)
    items, written = write(store, work)
    assert written == [model.deliver(d, us) for d, us in items]
    return items


def _again(store: ports.Store, model: Model, item: tuple[Delivery, list[str]], now: int
           ) -> None:
    """An event delivered again to the same users: nothing written."""
    d, users = replace(item[0], delivered_at=now), item[1]
    assert write(store, lambda tx: tx.inbox.deliver_many([(d, users)])[0]) == []
    assert model.deliver(d, users) == []


def _read_newest(store: ports.Store, model: Model, user: str, now: int) -> None:
    """The user's newest group marked read."""
    group = model.newest_group(user)
    if group is None:
        return
    model.read_group(user, group)
    write(store, lambda tx: tx.inbox.mark_groups(
        user, [group], read=True, now=now, markers=tx.inbox.load_markers(user)))


def _read_all(store: ports.Store, model: Model, user: str, now: int) -> None:
    model.read_all[user] = now
    write(store, lambda tx: tx.inbox.set_marker(user, "all", now))


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=STEPS)
def test_every_store_bundles_as_the_domain_rule(
        store: ports.Store, clock: FrozenClock,
        steps: list[tuple[str, list[Send] | int | str]]) -> None:
    example = next(EXAMPLES)
    users = {u: f"x{example}{u}" for u in USERS}
    model = Model()
    sent: list[tuple[Delivery, list[str]]] = []
    for kind, arg in steps:
        clock.advance(0.01)
        now = clock.now_us()
        if kind == "deliver":
            assert isinstance(arg, list)
            sent += _deliver(store, model, users, arg, now)
        elif kind == "again" and sent:
            assert isinstance(arg, int)
            _again(store, model, sent[arg % len(sent)], now)
        elif kind == "read_newest":
            _read_newest(store, model, users[str(arg)], now)
        elif kind == "read_all":
            _read_all(store, model, users[str(arg)], now)
    events = sorted({d.event_id for d, _ in sent})
    mine = sorted(users.values())
    assert _stored(store, mine, events) == {u: model.groups(u) for u in mine}
