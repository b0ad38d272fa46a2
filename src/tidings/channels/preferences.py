"""What a user's preferences say about one notification: web, email (and how), webhook."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from tidings.domain.types import EventType
from tidings.store.sql.schema import email_bounces, preferences

FREQUENCIES = ("immediate", "daily", "weekly", "never")


@dataclass(frozen=True)
class Plan:
    """One user's channels for one event."""

    web: bool
    email: str | None  # None, or the frequency: immediate / daily / weekly
    address: str | None
    webhook: str | None  # the URL


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
    )


def load_many(conn: Connection, users: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Preferences of those users who have any (one query per 5,000 users)."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(users), 5000):
        part = list(users[start:start + 5000])
        for row in conn.execute(select(preferences.c.user_id, preferences.c.data)
                                .where(preferences.c.user_id.in_(part))):
            found[row.user_id] = json.loads(row.data)
    return found


def bounced(conn: Connection, addresses: Sequence[str]) -> set[str]:
    if not addresses:
        return set()
    rows = conn.execute(select(email_bounces.c.address)
                        .where(email_bounces.c.address.in_([a.lower() for a in addresses])))
    return {r[0] for r in rows}
