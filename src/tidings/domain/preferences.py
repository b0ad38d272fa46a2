"""What a user's preferences say about one notification: web, email (and how), webhook, push.

Pure rules: the stored preferences come in as a mapping."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidings.domain.types import EventType

FREQUENCIES = ("immediate", "daily", "weekly", "never")
WEEK = 7 * 86_400  # the longest mail delay


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


def plan(prefs: Mapping[str, Any] | None, event_type: EventType, bounced: bool,
         object: str | None = None) -> Plan:
    """``object``: the event's, which gets no mail if the user muted it for email
    (``email.muted_objects``)."""
    prefs = prefs or {}
    email = prefs.get("email") or {}
    address = email.get("address")
    frequency = email.get("frequency", "immediate")
    wants_mail = (address and not bounced and frequency != "never"
                  and channel_on(prefs, event_type, "email")
                  and (object is None or object not in (email.get("muted_objects") or ())))
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


def mail_delay(prefs: Mapping[str, Any] | None, event_type: EventType) -> tuple[int, bool]:
    """How long the type's immediate mail waits and whether it then goes only if still unread:
    the user's setting for the type's category (``email.delays``), else the type's own."""
    own = (((prefs or {}).get("email") or {}).get("delays") or {}).get(event_type.category)
    if not isinstance(own, Mapping):
        return event_type.email_delay_seconds, event_type.email_unless_read
    seconds = own.get("email_delay_seconds", 0)
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 0 <= seconds <= WEEK:
        seconds = 0  # stored through the library unchecked: no delay rather than a failure
    return seconds, own.get("email_unless_read") is True


def push_delay(prefs: Mapping[str, Any] | None, event_type: EventType) -> int:
    """How long the type's push waits (and then goes only if still unread): the user's
    setting for the type's category (``push.delays``), else the type's own."""
    own = (((prefs or {}).get("push") or {}).get("delays") or {}).get(event_type.category)
    if not isinstance(own, Mapping):
        return event_type.push_delay_seconds
    seconds = own.get("push_delay_seconds", 0)
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 0 <= seconds <= WEEK:
        return 0  # stored through the library unchecked: no delay rather than a failure
    return seconds


def email_switched(prefs: Mapping[str, Any], purpose: str, target: str, *,
                   on: bool) -> dict[str, Any]:
    """``prefs`` with one kind of mail turned off (``on=False``: an unsubscribe link) or on
    again (its undo). ``purpose``: ``category`` (the category's email switch), ``object``
    (the object in ``email.muted_objects``) or ``all`` (the frequency: ``never``, or
    ``target`` again)."""
    changed = dict(prefs)
    email = dict(changed.get("email") or {})
    if purpose == "category":
        channels = dict(changed.get("channels") or {})
        channels[target] = {**(channels.get(target) or {}), "email": on}
        changed["channels"] = channels
        return changed
    if purpose == "object":
        muted = [o for o in email.get("muted_objects") or () if o != target]
        email["muted_objects"] = muted if on else [*muted, target]
    elif purpose == "all":
        email["frequency"] = target if on else "never"
    else:
        raise ValueError(f"unknown unsubscribe purpose {purpose!r}")
    changed["email"] = email
    return changed
