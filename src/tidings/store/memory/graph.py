"""GraphStore in memory: users, subscriptions (indexed by target), follows both ways, mutes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tidings.domain.audience import ACTOR_FOLLOWERS, OBJECT_SUBSCRIBERS, AudienceSource
from tidings.domain.timeline import SourceState, pushed_from_start
from tidings.domain.views import Follow, Member, Subscription
from tidings.store.memory.state import Journal, State


class MemoryGraph:
    """The graph of one unit of work."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    # -- users ---------------------------------------------------------------------------------

    def add_user(self, user: str, now: int) -> bool:
        if user in self._s.users:
            return False
        self._j.put(self._s.users, user, now)
        return True

    def set_joined(self, user: str, joined: int) -> None:
        if user in self._s.users:
            self._j.put(self._s.users, user, joined)

    def joined(self, users: Sequence[str]) -> dict[str, int]:
        return {user: self._s.users[user] for user in users if user in self._s.users}

    # -- subscriptions -------------------------------------------------------------------------

    def subscription_count(self, user: str) -> int:
        return sum(1 for s in self._s.subscriptions.values() if s.user == user)

    def save_subscription(self, user: str, type: str, object: str, channels: Sequence[str],
                          now: int, expires_at: int | None = None) -> Subscription:
        # as the SQL store keeps them: one column of the sorted, distinct names
        stored = tuple(sorted({c for c in channels if c}))
        key = (user, type, object)
        existing = self._s.subscription_keys.get(key)
        if existing is not None:
            subscription = replace(self._s.subscriptions[existing], channels=stored,
                                   expires_at=expires_at)
        else:
            subscription = Subscription(id=self._j.next_id(self._s.seq, "subscriptions"),
                                        user=user, type=type, object=object, channels=stored,
                                        created_at=now, expires_at=expires_at)
            self._j.put(self._s.subscription_keys, key, subscription.id)
            self._j.put_in(self._s.subscribers, (type, object), user, subscription.id)
        self._j.put(self._s.subscriptions, subscription.id, subscription)
        return subscription

    def delete_subscription(self, user: str, subscription_id: int) -> bool:
        found = self._s.subscriptions.get(subscription_id)
        if found is None or found.user != user:
            return False
        self._j.drop(self._s.subscriptions, subscription_id)
        self._j.drop(self._s.subscription_keys, (found.user, found.type, found.object))
        self._j.drop_in(self._s.subscribers, (found.type, found.object), found.user)
        return True

    def subscriptions(self, user: str, *, after_id: int, limit: int) -> list[Subscription]:
        mine = sorted(s.id for s in self._s.subscriptions.values()
                      if s.user == user and s.id > after_id)
        return [self._s.subscriptions[i] for i in mine[:limit]]

    # -- follows -------------------------------------------------------------------------------

    def add_follow(self, follower: str, followee: str, now: int) -> bool:
        if followee in self._s.following.get(follower, {}):
            return False
        self._j.put_in(self._s.following, follower, followee, now)
        self._j.put_in(self._s.followers, followee, follower, now)
        self._count_follower(followee, 1)
        return True

    def _count_follower(self, followee: str, step: int) -> None:
        state = self._s.timeline_sources.get(followee, SourceState())
        self._j.put(self._s.timeline_sources, followee,
                    replace(state, followers=max(state.followers + step, 0)))

    def followee_sources(self, user: str) -> dict[str, SourceState]:
        return {f: self._s.timeline_sources.get(f, SourceState())
                for f in sorted(self._s.following.get(user, {}))}

    def unpushed_followees(self, user: str) -> dict[str, SourceState]:
        return {f: s for f, s in self.followee_sources(user).items()
                if not pushed_from_start(s)}

    def timeline_sources(self, actors: Sequence[str]) -> dict[str, SourceState]:
        return {a: self._s.timeline_sources[a] for a in set(actors)
                if a in self._s.timeline_sources}

    def set_timeline_model(self, actor: str, model: str | None) -> None:
        state = self._s.timeline_sources.get(actor, SourceState())
        self._j.put(self._s.timeline_sources, actor, replace(state, model=model))

    def set_push_from(self, actor: str, push_from: tuple[int, int] | None) -> None:
        state = self._s.timeline_sources.get(actor, SourceState())
        self._j.put(self._s.timeline_sources, actor, replace(state, push_from=push_from))

    def remove_follow(self, follower: str, followee: str) -> bool:
        if self._j.drop_in(self._s.following, follower, followee) is None:
            return False
        self._j.drop_in(self._s.followers, followee, follower)
        self._count_follower(followee, -1)
        return True

    def follows(self, user: str, *, followers: bool, after: str, limit: int) -> list[Follow]:
        edges = (self._s.followers if followers else self._s.following).get(user, {})
        others = sorted(u for u in edges if u > after)[:limit]
        return [Follow(other, edges[other]) for other in others]

    # -- audiences -----------------------------------------------------------------------------

    def _users_of(self, source: AudienceSource) -> list[str]:
        """Every user of the source, ascending."""
        found: set[str] = set()
        if source.kind == OBJECT_SUBSCRIBERS:
            objects = ["*"] if source.object is None else [source.object, "*"]
            at = source.at
            for event_type in {source.type, "*"}:
                for obj in objects:
                    found.update(user for user, sid in
                                 self._s.subscribers.get((event_type, obj), {}).items()
                                 if at is None or self._s.subscriptions[sid].live(at))
        elif source.kind == ACTOR_FOLLOWERS and source.actor is not None:
            found.update(self._s.followers.get(source.actor, {}))
        return sorted(found)

    def audience(self, source: AudienceSource, *, after: str, upto: str | None,
                 limit: int | None = None) -> list[str]:
        users = [u for u in self._users_of(source)
                 if u > after and (upto is None or u <= upto)]
        return users if limit is None else users[:limit]

    def followers_of(self, actors: Sequence[str], *, limit: int) -> dict[str, list[str]]:
        found = {actor: sorted(self._s.followers.get(actor, {}))[:limit] for actor in set(actors)}
        return {actor: users for actor, users in found.items() if users}

    def nth_after(self, source: AudienceSource, after: str, n: int) -> str | None:
        users = [u for u in self._users_of(source) if u > after]
        return users[n - 1] if 1 <= n <= len(users) else None

    def subscription_channels(self, users: Sequence[str], type: str, object: str | None,
                              at: int) -> dict[str, frozenset[str]]:
        objects = ["*"] if object is None else [object, "*"]
        found: dict[str, set[str]] = {}
        for user in set(users):
            for event_type in {type, "*"}:
                for obj in objects:
                    sid = self._s.subscription_keys.get((user, event_type, obj))
                    if sid is not None and self._s.subscriptions[sid].live(at):
                        found.setdefault(user, set()).update(
                            self._s.subscriptions[sid].channels)
        return {user: frozenset(channels) for user, channels in found.items()}

    def following(self, users: Sequence[str], followee: str) -> set[str]:
        followers = self._s.followers.get(followee, {})
        return {u for u in users if u in followers}

    # -- groups (privacy rules) ----------------------------------------------------------------

    def add_member(self, group: str, user: str, now: int) -> bool:
        if user in self._s.groups.get(group, {}):
            return False
        self._j.put_in(self._s.groups, group, user, now)
        return True

    def remove_member(self, group: str, user: str) -> bool:
        return self._j.drop_in(self._s.groups, group, user) is not None

    def members(self, group: str, *, after: str, limit: int) -> list[Member]:
        members = self._s.groups.get(group, {})
        return [Member(u, members[u]) for u in sorted(u for u in members if u > after)[:limit]]

    def members_among(self, group: str, users: Sequence[str]) -> set[str]:
        members = self._s.groups.get(group, {})
        return {u for u in users if u in members}

    # -- mutes ---------------------------------------------------------------------------------

    def add_mute(self, user: str, kind: str, value: str) -> None:
        if (kind, value) not in self._s.mutes.get(user, {}):
            self._j.put_in(self._s.mutes, user, (kind, value), None)

    def remove_mute(self, user: str, kind: str, value: str) -> int:
        if (kind, value) not in self._s.mutes.get(user, {}):
            return 0
        self._j.drop_in(self._s.mutes, user, (kind, value))
        return 1

    def replace_mutes(self, user: str, pairs: Sequence[tuple[str, str]]) -> None:
        for pair in list(self._s.mutes.get(user, {})):
            self._j.drop_in(self._s.mutes, user, pair)
        for kind, value in pairs:
            self.add_mute(user, kind, value)

    def mutes(self, user: str) -> list[tuple[str, str]]:
        return sorted(self._s.mutes.get(user, {}))

    def mutes_many(self, users: Sequence[str]) -> dict[str, set[tuple[str, str]]]:
        return {u: set(self._s.mutes[u]) for u in set(users) if self._s.mutes.get(u)}

    def muting(self, users: Sequence[str], actor: str | None, object: str | None) -> set[str]:
        wanted: set[tuple[str, str]] = set()
        if actor is not None:
            wanted.add(("actor", actor))
        if object is not None:
            wanted.add(("object", object))
        if not wanted:
            return set()
        return {u for u in users if not wanted.isdisjoint(self._s.mutes.get(u, {}))}
