"""Removing one person's tidings data when their Django account is deleted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from tidings.contrib.django.runtime import get_tidings

T = TypeVar("T")


def erase_user(user: str) -> dict[str, int]:
    """Remove ``user``'s inbox, subscriptions, follows (both ways), browsers' push
    subscriptions, mutes and preferences;
    returns how many of each went. Events they published stay in other people's inboxes until
    retracted."""
    tidings = get_tidings()
    muted = tidings.muted(user)
    return {
        "notifications": _drain(
            lambda: [n.id for n in tidings.notifications(user, limit=100).items],
            lambda nid: tidings.delete_notification(user, nid)),
        "subscriptions": _drain(
            lambda: [s.id for s in tidings.subscriptions(user, limit=100).items],
            lambda sid: tidings.unsubscribe(user, sid)),
        "following": _drain(
            lambda: [f.user for f in tidings.following(user, limit=100).items],
            lambda other: tidings.unfollow(user, other)),
        "followers": _drain(
            lambda: [f.user for f in tidings.followers(user, limit=100).items],
            lambda other: tidings.unfollow(other, user)),
        "push_subscriptions": _drain(
            lambda: [s.id for s in tidings.push.list(user)],
            lambda sid: tidings.push.remove(user, sid)),
        "mutes": sum(len(values) for values in muted.values()),
        "preferences": _reset(tidings.set_preferences, user),
    }


def _drain(page: Callable[[], Sequence[T]], remove: Callable[[T], object]) -> int:
    """Remove what ``page`` lists until it lists nothing."""
    count = 0
    while batch := page():
        for item in batch:
            remove(item)
        count += len(batch)
    return count


def _reset(save: Callable[..., object], user: str) -> int:
    save(user, {"muted": {}})  # the defaults again, and no mutes
    return 1
