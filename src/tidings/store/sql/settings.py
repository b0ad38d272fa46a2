"""Declared types, preferences and bounces (``SettingsStore`` on SQL)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, delete, select

from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import email_bounces, event_types, preferences


class SqlSettings:
    """The settings tables within one transaction."""

    def __init__(self, db: Database, conn: Connection) -> None:
        self.db = db
        self.conn = conn

    def save_type(self, name: str, definition: str, now: int) -> None:
        self.conn.execute(self.db.upsert(
            event_types, ["name"], {"name": name, "definition": definition, "updated_at": now},
            ["definition", "updated_at"]))

    def load_types(self) -> list[tuple[str, str]]:
        rows = self.conn.execute(select(event_types.c.name, event_types.c.definition)).all()
        return [(r.name, r.definition) for r in rows]

    def preferences(self, user: str) -> dict[str, Any] | None:
        raw = self.conn.execute(select(preferences.c.data)
                                .where(preferences.c.user_id == user)).scalar()
        if raw is None:
            return None
        data: dict[str, Any] = json.loads(raw)
        return data

    def preferences_many(self, users: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for part in self.db.parts(users):
            for row in self.conn.execute(select(preferences.c.user_id, preferences.c.data)
                                         .where(self.db.among(preferences.c.user_id, part))):
                found[row.user_id] = json.loads(row.data)
        return found

    def save_preferences(self, user: str, data: Mapping[str, Any], now: int) -> None:
        self.conn.execute(self.db.upsert(
            preferences, ["user_id"],
            {"user_id": user, "data": json.dumps(dict(data)), "updated_at": now},
            ["data", "updated_at"]))

    def report_bounce(self, address: str, reason: str, now: int) -> None:
        self.conn.execute(self.db.upsert(
            email_bounces, ["address"],
            {"address": address.lower(), "reason": reason[:255], "bounced_at": now},
            ["reason", "bounced_at"]))

    def clear_bounce(self, address: str) -> bool:
        result = self.conn.execute(delete(email_bounces).where(
            email_bounces.c.address == address.lower()))
        return result.rowcount > 0

    def bounced(self, addresses: Sequence[str]) -> set[str]:
        if not addresses:
            return set()
        rows = self.conn.execute(select(email_bounces.c.address).where(
            email_bounces.c.address.in_([a.lower() for a in addresses])))
        return {r[0] for r in rows}
