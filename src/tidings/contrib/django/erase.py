"""Removing one person's tidings data when their Django account is deleted."""

from __future__ import annotations

from tidings.contrib.django.runtime import get_tidings


def erase_user(user: str) -> dict[str, int]:
    """Erase everything tidings keeps about ``user`` (GDPR Art. 17), here and now: the
    erasure ``DELETE /v1/users/{user}`` queues (:meth:`tidings.engine.Tidings.erase_user_now`
    — their inbox, subscriptions, follows both ways, push subscriptions, mutes, preferences,
    the events they published retracted from every inbox and timeline, and more). Returns
    how many records went, by kind."""
    return get_tidings().erase_user_now(user)
