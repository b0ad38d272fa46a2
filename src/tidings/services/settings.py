"""Preferences (channels per category, email, locale, webhook, mutes) and bounced addresses."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tidings.clock import Clock
from tidings.config import Config
from tidings.domain.events import check_object, check_user_id
from tidings.domain.text import check_text
from tidings.exceptions import InvalidInput
from tidings.ports import Store, Tx
from tidings.services.graph import touch_user

UrlCheck = Callable[[str], None]  # raises ValueError saying why a webhook URL is refused


@dataclass(frozen=True)
class PreferenceLimits:
    """How much one user may store: the preferences' JSON size and the categories with
    channel switches (``TIDINGS_MAX_PREFERENCES_BYTES``, ``TIDINGS_MAX_PREFERENCE_CATEGORIES``).
    """

    max_bytes: int = 64 * 1024
    max_categories: int = 1000

    @classmethod
    def of(cls, config: Config) -> PreferenceLimits:
        return cls(config.max_preferences_bytes, config.max_preference_categories)

    def check(self, stored: Mapping[str, Any]) -> None:
        channels = stored.get("channels")
        if isinstance(channels, Mapping) and len(channels) > self.max_categories:
            raise InvalidInput(
                f"channels switches {len(channels)} categories; at most {self.max_categories} "
                "are allowed (TIDINGS_MAX_PREFERENCE_CATEGORIES)", field="channels")
        try:
            size = len(json.dumps(stored, separators=(",", ":"), ensure_ascii=False,
                                  allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"preferences are not JSON-serialisable: {exc}",
                               field="preferences") from None
        if size > self.max_bytes:
            raise InvalidInput(f"preferences are {size} bytes as JSON; at most {self.max_bytes} "
                               "are allowed (TIDINGS_MAX_PREFERENCES_BYTES)",
                               field="preferences")


class SettingsService:
    """What each user wants, and which addresses must not be mailed.

    ``check_webhook_url`` (given by the engine: the channel's address rule) refuses a webhook
    URL as it is saved, so a user learns at once; deliveries check again whatever is stored.
    """

    def __init__(self, store: Store, clock: Clock,
                 check_webhook_url: UrlCheck | None = None,
                 limits: PreferenceLimits | None = None) -> None:
        self.store = store
        self.clock = clock
        self.check_webhook_url = check_webhook_url
        self.limits = limits or PreferenceLimits()

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

    def set_preferences(self, user: str, data: Mapping[str, Any], *,
                        limited: bool = True) -> dict[str, Any]:
        """Replace a user's preferences; ``muted`` replaces their mutes. ``limited=False``
        skips the size limits (an unsubscribe must not fail on what was stored before)."""
        check_user_id(user)
        stored = {k: v for k, v in data.items() if k != "muted"}
        check_text(stored, "", whole="preferences")
        if limited:
            self.limits.check(stored)
        muted = data.get("muted") or {}
        pairs = [("actor", check_user_id(a, "muted.actors")) for a in muted.get("actors", [])]
        pairs += [("object", check_object(o, "muted.objects"))
                  for o in muted.get("objects", [])]
        self._check_webhook(user, stored.get("webhook"))
        now = self.clock.now_us()

        def work(tx: Tx) -> None:
            touch_user(tx, user, now)
            tx.settings.save_preferences(user, stored, now)
            tx.graph.replace_mutes(user, pairs)

        self.store.transact(work)
        return self.get_preferences(user)

    def _check_webhook(self, user: str, webhook: object) -> None:
        """Refuse a new webhook URL the channel would not deliver to. The URL already stored
        is not checked again (an unsubscribe must not fail on it; delivery checks it)."""
        if webhook is None:
            return
        if not isinstance(webhook, Mapping):
            raise InvalidInput("webhook must be an object with a url", field="webhook")
        url = webhook.get("url")
        if url is None:
            return
        if not isinstance(url, str) or not 1 <= len(url) <= 1024:
            raise InvalidInput("webhook.url must be a URL of at most 1024 characters",
                               field="webhook.url")
        if self.check_webhook_url is None:
            return
        with self.store.read() as tx:
            stored = (tx.settings.preferences(user) or {}).get("webhook")
        if isinstance(stored, Mapping) and stored.get("url") == url:
            return
        try:
            self.check_webhook_url(url)  # may resolve the host: outside any unit
        except ValueError as exc:
            raise InvalidInput(f"webhook.url: {exc}", field="webhook.url") from None

    def change_preferences(self, user: str,
                           change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Save ``change(current preferences)``, past the size limits (an unsubscribe link or
        its undo must not fail on what was stored before)."""
        return self.set_preferences(user, change(self.get_preferences(user)), limited=False)

    def unsubscribe_email(self, user: str) -> None:
        """One-click unsubscribe: email frequency becomes 'never'."""
        current = self.get_preferences(user)
        email_prefs = dict(current.get("email") or {})
        email_prefs["frequency"] = "never"
        self.set_preferences(user, {**current, "email": email_prefs}, limited=False)

    def report_bounce(self, address: str, reason: str = "hard bounce") -> None:
        """A hard bounce: no more mail to this address (web delivery goes on)."""
        if not isinstance(address, str) or "@" not in address or len(address) > 254:
            raise InvalidInput("address must be an email address", field="address")
        check_text(address, "address")
        check_text(reason, "reason")
        now = self.clock.now_us()
        self.store.transact(lambda tx: tx.settings.report_bounce(address.strip(), reason, now))

    def clear_bounce(self, address: str) -> bool:
        return self.store.transact(lambda tx: tx.settings.clear_bounce(address.strip()))
