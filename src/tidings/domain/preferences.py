"""What a user's preferences say about one notification: web, email (and how), webhook, push.

Pure rules: the stored preferences come in as a mapping."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidings.domain.types import EventType

FREQUENCIES = ("immediate", "daily", "weekly", "never")


@dataclass(frozen=True)
class Plan:
    """One user's channels for one event."""

    web: bool
    email: str | None  # None, or the frequency: immediate / daily / weekly
    address: str | None
    webhook: str | None  # the URL
    push: bool = False  # Web Push to the user's browsers (if they subscribed any)


def channel_on(prefs: Mapping[str, Any], event_type: EventType, channel: str) -> bool:
    """The user's switch for (category, channel), else the type's default; mandatory types
    cannot be turned off."""
    if event_type.mandatory and channel in event_type.channels:
        return True
    switches = prefs.get("channels", {}).get(event_type.category, {})
    if channel in switches:
        return bool(switches[channel])
    return channel in event_type.channels


def plan(prefs: Mapping[str, Any] | None, event_type: EventType, bounced: bool) -> Plan:
    prefs = prefs or {}
    email = prefs.get("email") or {}
    address = email.get("address")
    frequency = email.get("frequency", "immediate")
    wants_mail = (address and not bounced and frequency != "never"
                  and channel_on(prefs, event_type, "email"))
    if event_type.mandatory and address and not bounced and "email" in event_type.channels:
        wants_mail = True
        frequency = "immediate" if frequency == "never" else frequency
    hook = (prefs.get("webhook") or {}).get("url")
    return Plan(
        web=channel_on(prefs, event_type, "web"),
        email=frequency if wants_mail else None,
        address=address if wants_mail else None,
        webhook=hook if hook and channel_on(prefs, event_type, "webhook") else None,
        push=channel_on(prefs, event_type, "push"),
    )


def within(plan: Plan, channels: frozenset[str] | None) -> Plan:
    """``plan`` limited to ``channels`` (a subscription's; None: no limit). Preferences and
    the subscription both have their say: a channel is used only if both allow it."""
    if channels is None:
        return plan
    mail = "email" in channels
    return Plan(web=plan.web and "web" in channels, email=plan.email if mail else None,
                address=plan.address if mail else None,
                webhook=plan.webhook if "webhook" in channels else None,
                push=plan.push and "push" in channels)
