"""SettingsStore in memory: declared types, preferences (kept as JSON text), bounces."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tidings.store.memory.state import Journal, State


class MemorySettings:
    """The settings of one unit of work."""

    def __init__(self, state: State, journal: Journal) -> None:
        self._s = state
        self._j = journal

    def save_type(self, name: str, definition: str, now: int) -> None:
        self._j.put(self._s.event_types, name, definition)

    def load_types(self) -> list[tuple[str, str]]:
        return sorted(self._s.event_types.items())

    def preferences(self, user: str) -> dict[str, Any] | None:
        raw = self._s.preferences.get(user)
        if raw is None:
            return None
        data: dict[str, Any] = json.loads(raw)
        return data

    def preferences_many(self, users: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for user in users:
            data = self.preferences(user)
            if data is not None:
                found[user] = data
        return found

    def save_preferences(self, user: str, data: Mapping[str, Any], now: int) -> None:
        # JSON text, as the SQL store keeps it: a reader's changes never reach the store
        self._j.put(self._s.preferences, user, json.dumps(dict(data)))

    def report_bounce(self, address: str, reason: str, now: int) -> None:
        self._j.put(self._s.bounces, _address(address), (reason, now))

    def clear_bounce(self, address: str) -> bool:
        return self._j.drop(self._s.bounces, _address(address)) is not None

    def bounced(self, addresses: Sequence[str]) -> set[str]:
        return {a for a in map(_address, addresses) if a in self._s.bounces}


def _address(address: str) -> str:
    return address.lower()
