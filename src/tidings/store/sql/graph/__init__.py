"""Who hears of what (``GraphStore`` on SQL): users, follows, groups, mutes, and the audience
sources listed by chunk (their statements: :mod:`tidings.store.sql.graph.audience`); subscriptions
in :mod:`tidings.store.sql.graph.subscriptions`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    bindparam,
    delete,
    or_,
    select,
)

from tidings.domain.audience import AudienceSource
from tidings.domain.timeline import SourceState
from tidings.domain.views import Follow, Member
from tidings.store.sql.core.bulk import probes
from tidings.store.sql.core.database import Database
from tidings.store.sql.graph import users as registry
from tidings.store.sql.graph.audience import (
    ACTORS_PER_UNION,
    PG_FOLLOWERS,
    followers_union,
    live,
    ranged,
)
from tidings.store.sql.graph.subscriptions import SqlSubscriptions
from tidings.store.sql.schema import (
    follows,
    group_members,
    mutes,
    subscriptions,
    timeline_sources,
)

# which of a JSON array of users are members of :group_name (PostgreSQL: .bulk.probes)
_PG_MEMBERS = probes(group_members, ("group_name",), "user_id", ("user_id",))


def _pushed(at: int | None, id_: int | None) -> tuple[int, int] | None:
    """A stored ``push_from`` as a position (None: the source is pulled)."""
    return None if id_ is None else (int(at or 0), int(id_))


# a timeline read's statements, built once (run straight on the driver: Database.fetch)
FOLLOWEE_SOURCES = (
    select(follows.c.followee, timeline_sources.c.followers, timeline_sources.c.model,
           timeline_sources.c.push_from, timeline_sources.c.actor,
           timeline_sources.c.push_from_at)
    .select_from(follows.outerjoin(timeline_sources,
                                   timeline_sources.c.actor == follows.c.followee))
    .where(follows.c.follower == bindparam("user")))
_TS = timeline_sources.c  # the stored states that are not "pushed from the start"
UNPUSHED_FOLLOWEES = FOLLOWEE_SOURCES.where(_TS.actor.isnot(None), or_(
    _TS.model.isnot(None), _TS.push_from.is_(None), _TS.push_from != 0))
MUTES = (select(mutes.c.kind, mutes.c.value).where(mutes.c.user_id == bindparam("user"))
         .order_by(mutes.c.kind, mutes.c.value))


class SqlGraph(SqlSubscriptions):
    """The graph tables within one transaction."""

    def __init__(self, db: Database, conn: Connection,
                 prefetched: dict[tuple[str, str], Any] | None = None) -> None:
        self.db = db
        self.conn = conn
        # the followees and mutes a timeline read's first statement fetched (SqlTimeline.head),
        # each taken once
        self.prefetched = prefetched

    def add_user(self, user: str, now: int) -> bool:
        return registry.add_user(self.db, self.conn, user, now)

    def set_joined(self, user: str, joined: int) -> None:
        registry.set_joined(self.conn, user, joined)

    def joined(self, users: Sequence[str]) -> dict[str, int]:
        return registry.joined(self.db, self.conn, users)

    # -- follows ----------------------------------------------------------------------------

    def add_follow(self, follower: str, followee: str, now: int) -> bool:
        result = self.conn.execute(self.db.insert_ignore(follows).values(
            follower=follower, followee=followee, created_at=now))
        if result.rowcount != 1:
            return False
        self._count_follower(followee, 1)
        return True

    def remove_follow(self, follower: str, followee: str) -> bool:
        result = self.conn.execute(delete(follows).where(
            follows.c.follower == follower, follows.c.followee == followee))
        if result.rowcount <= 0:
            return False
        self._count_follower(followee, -1)
        return True

    def _count_follower(self, followee: str, step: int) -> None:
        self.conn.execute(self.db.upsert_add(timeline_sources, ["actor"], "followers"),
                          [{"actor": followee, "followers": step, "model": None,
                            "push_from": 0, "push_from_at": 0}])

    def followee_sources(self, user: str, statement: Any = FOLLOWEE_SOURCES
                         ) -> dict[str, SourceState]:
        rows = self._prefetched("followees", user) if statement is FOLLOWEE_SOURCES else None
        if rows is None:
            rows = self.db.fetch(self.conn, statement, {"user": user})
        return {followee: SourceState(max(followers, 0), model, _pushed(push_from_at, push_from))
                if actor is not None else SourceState()
                for followee, followers, model, push_from, actor, push_from_at in rows}

    def unpushed_followees(self, user: str) -> dict[str, SourceState]:
        return self.followee_sources(user, UNPUSHED_FOLLOWEES)

    def timeline_sources(self, actors: Sequence[str]) -> dict[str, SourceState]:
        t = timeline_sources.c
        found: dict[str, SourceState] = {}
        wanted = sorted(set(actors))
        for part in self.db.parts(wanted):
            found.update((r.actor, SourceState(max(r.followers, 0), r.model,
                                               _pushed(r.push_from_at, r.push_from)))
                         for r in self.conn.execute(select(timeline_sources).where(
                             self.db.among(t.actor, part))))
        return found

    def set_timeline_model(self, actor: str, model: str | None) -> None:
        self.conn.execute(self.db.upsert(timeline_sources, ["actor"], {
            "actor": actor, "followers": 0, "model": model, "push_from": 0, "push_from_at": 0},
            ["model"]))

    def set_push_from(self, actor: str, push_from: tuple[int, int] | None) -> None:
        at, id_ = push_from if push_from is not None else (None, None)
        self.conn.execute(self.db.upsert(timeline_sources, ["actor"], {
            "actor": actor, "followers": 0, "model": None, "push_from": id_,
            "push_from_at": at}, ["push_from", "push_from_at"]))

    def follows(self, user: str, *, followers: bool, after: str, limit: int) -> list[Follow]:
        mine, theirs = ("followee", "follower") if followers else ("follower", "followee")
        rows = self.conn.execute(
            select(follows.c[theirs], follows.c.created_at)
            .where(follows.c[mine] == user, follows.c[theirs] > after)
            .order_by(follows.c[theirs]).limit(limit)).all()
        return [Follow(r[0], r[1]) for r in rows]

    # -- audience -----------------------------------------------------------------------------

    def audience(self, source: AudienceSource, *, after: str, upto: str | None,
                 limit: int | None = None) -> list[str]:
        query = ranged(source, self.db.backend, after, upto, limit)
        if query is None:
            return []
        return [str(u) for u in self.conn.execute(query).scalars().all()]  # fetched at once

    def followers_of(self, actors: Sequence[str], *, limit: int) -> dict[str, list[str]]:
        wanted = sorted(set(actors))
        found: dict[str, list[str]] = {}
        if not wanted:
            return found
        if self.db.backend == "postgresql":
            for actor, follower in self.db.fetch(self.conn, PG_FOLLOWERS,
                                                 {"actors": wanted, "n": limit}):
                found.setdefault(actor, []).append(follower)
            return found
        for start in range(0, len(wanted), ACTORS_PER_UNION):  # one UNION ALL of index ranges
            part = wanted[start:start + ACTORS_PER_UNION]
            params: dict[str, Any] = {f"a{i}": actor for i, actor in enumerate(part)}
            params["n"] = limit
            if self.db.backend == "mysql":  # an actor's followers as one JSON array: the
                # driver reads one row an actor, not one a follower (4 µs a row in pymysql)
                for actor, followers in self.db.fetch(
                        self.conn, followers_union(len(part), aggregated=True), params):
                    found.setdefault(actor, []).extend(json.loads(followers))
                continue
            for actor, follower in self.db.fetch(self.conn, followers_union(len(part)),
                                                 params):
                found.setdefault(actor, []).append(follower)
        return {actor: sorted(users) for actor, users in found.items()}

    def nth_after(self, source: AudienceSource, after: str, n: int) -> str | None:
        query = ranged(source, self.db.backend, after, None, 1, n - 1)
        if query is None:
            return None
        row = self.conn.execute(query).first()
        return str(row[0]) if row is not None else None

    def subscription_channels(self, users: Sequence[str], type: str, object: str | None,
                              at: int) -> dict[str, frozenset[str]]:
        objects = ["*"] if object is None else [object, "*"]
        found: dict[str, set[str]] = {}
        for part in self.db.parts(users):
            rows = self.conn.execute(
                select(subscriptions.c.user_id, subscriptions.c.channels)
                .where(self.db.among(subscriptions.c.user_id, part),
                       subscriptions.c.type.in_([type, "*"]),
                       subscriptions.c.object.in_(objects), live(at)))
            for row in rows:
                found.setdefault(row.user_id, set()).update(
                    c for c in row.channels.split(",") if c)
        return {user: frozenset(channels) for user, channels in found.items()}

    def following(self, users: Sequence[str], followee: str) -> set[str]:
        found: set[str] = set()
        for part in self.db.parts(users):
            found.update(self.conn.execute(
                select(follows.c.follower)
                .where(self.db.among(follows.c.follower, part),
                       follows.c.followee == followee)).scalars())
        return found

    # -- groups (privacy rules) ----------------------------------------------------------------

    def add_member(self, group: str, user: str, now: int) -> bool:
        result = self.conn.execute(self.db.insert_ignore(group_members).values(
            group_name=group, user_id=user, created_at=now))
        return bool(result.rowcount == 1)

    def remove_member(self, group: str, user: str) -> bool:
        result = self.conn.execute(delete(group_members).where(
            group_members.c.group_name == group, group_members.c.user_id == user))
        return result.rowcount > 0

    def members(self, group: str, *, after: str, limit: int) -> list[Member]:
        rows = self.conn.execute(
            select(group_members.c.user_id, group_members.c.created_at)
            .where(group_members.c.group_name == group, group_members.c.user_id > after)
            .order_by(group_members.c.user_id).limit(limit)).all()
        return [Member(r.user_id, r.created_at) for r in rows]

    def members_among(self, group: str, users: Sequence[str]) -> set[str]:
        found: set[str] = set()
        if self.db.backend == "postgresql" and users:  # a probe of the key per user
            return {r[0] for r in self.db.fetch(self.conn, _PG_MEMBERS, {
                "group_name": group, "values": json.dumps(list(users))})}
        for part in self.db.parts(users):
            found.update(self.conn.execute(
                select(group_members.c.user_id)
                .where(group_members.c.group_name == group,
                       self.db.among(group_members.c.user_id, part)))
                .scalars())
        return found

    # -- mutes ----------------------------------------------------------------------------------

    def add_mute(self, user: str, kind: str, value: str) -> None:
        self.conn.execute(self.db.insert_ignore(mutes).values(user_id=user, kind=kind,
                                                              value=value))

    def remove_mute(self, user: str, kind: str, value: str) -> int:
        result = self.conn.execute(delete(mutes).where(
            mutes.c.user_id == user, mutes.c.kind == kind, mutes.c.value == value))
        return int(result.rowcount)

    def replace_mutes(self, user: str, pairs: Sequence[tuple[str, str]]) -> None:
        self.conn.execute(delete(mutes).where(mutes.c.user_id == user))
        if pairs:
            self.db.insert_many(self.conn, mutes, [
                {"user_id": user, "kind": kind, "value": value} for kind, value in pairs
            ], ignore=True)

    def _prefetched(self, what: str, user: str) -> Any:
        return self.prefetched.pop((what, user), None) if self.prefetched is not None else None

    def mutes(self, user: str) -> list[tuple[str, str]]:
        rows = self._prefetched("mutes", user)
        if rows is None:
            rows = self.db.fetch(self.conn, MUTES, {"user": user})
        return [(kind, value) for kind, value in rows]

    def mutes_many(self, users: Sequence[str]) -> dict[str, set[tuple[str, str]]]:
        found: dict[str, set[tuple[str, str]]] = {}
        for part in self.db.parts(sorted(set(users))):
            for user, kind, value in self.conn.execute(
                    select(mutes.c.user_id, mutes.c.kind, mutes.c.value)
                    .where(self.db.among(mutes.c.user_id, part))):
                found.setdefault(user, set()).add((kind, value))
        return found

    def muting(self, users: Sequence[str], actor: str | None,
               object: str | None) -> set[str]:
        conditions = []
        if actor is not None:
            conditions.append(and_(mutes.c.kind == "actor", mutes.c.value == actor))
        if object is not None:
            conditions.append(and_(mutes.c.kind == "object", mutes.c.value == object))
        if not conditions or not users:
            return set()
        found: set[str] = set()
        for part in self.db.parts(users):
            rows = self.conn.execute(select(mutes.c.user_id).where(
                self.db.among(mutes.c.user_id, part), or_(*conditions)).distinct())
            found.update(r[0] for r in rows)
        return found
