"""Preferences (channels per category, email, locale, webhook, mutes) and bounced addresses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tidings.clock import Clock
from tidings.domain.events import check_object, check_user_id
from tidings.exceptions import InvalidInput
from tidings.ports import Store, Tx
from tidings.services.graph import touch_user


class SettingsService:
    """What each user wants, and which addresses must not be mailed."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def get_preferences(self, user: str) -> dict[str, Any]:
        """Stored preferences (email, channels per category, locale) plus the mutes."""
        check_user_id(user)
        with self.store.read() as tx:
            data = tx.settings.preferences(user) or {}
            pairs = tx.graph.mutes(user)
        muted: dict[str, list[str]] = {"actors": [], "objects": []}
        for kind, value in pairs:
            muted["actors" if kind == "actor" else "objects"].append(value)
        return {**data, "muted": muted}

    def set_preferences(self, user: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """Replace a user's preferences; ``muted`` replaces their mutes."""
        check_user_id(user)
        stored = {k: v for k, v in data.items() if k != "muted"}
        muted = data.get("muted") or {}
        pairs = [("actor", check_user_id(a, "muted.actors")) for a in muted.get("actors", [])]
        pairs += [("object", check_object(o, "muted.objects"))
                  for o in muted.get("objects", [])]
        now = self.clock.now_us()

        def work(tx: Tx) -> None:
            touch_user(tx, user, now)
            tx.settings.save_preferences(user, stored, now)
            tx.graph.replace_mutes(user, pairs)

        self.store.transact(work)
        return self.get_preferences(user)

    def unsubscribe_email(self, user: str) -> None:
        """One-click unsubscribe: email frequency becomes 'never'."""
        current = self.get_preferences(user)
        email_prefs = dict(current.get("email") or {})
        email_prefs["frequency"] = "never"
        self.set_preferences(user, {**current, "email": email_prefs})

    def report_bounce(self, address: str, reason: str = "hard bounce") -> None:
        """A hard bounce: no more mail to this address (web delivery goes on)."""
        if not isinstance(address, str) or "@" not in address or len(address) > 254:
            raise InvalidInput("address must be an email address", field="address")
        now = self.clock.now_us()
        self.store.transact(lambda tx: tx.settings.report_bounce(address.strip(), reason, now))

    def clear_bounce(self, address: str) -> bool:
        return self.store.transact(lambda tx: tx.settings.clear_bounce(address.strip()))
