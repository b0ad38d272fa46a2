"""Rows and group info as the inbox scripts return them."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from tidings.domain.views import GroupInfo, InboxRow, NotificationKey

HINTS = 1000  # types whose bundling page views remember (Redis.bundling)


class Row:
    """A notification hash as a script returns it (``row`` in common.lua, or an item of
    ``json_rows``)."""

    __slots__ = ("actor", "base", "bundle", "category", "created", "display", "flags",
                 "fresh", "id", "object", "read_at", "section", "type")

    def __init__(self, raw: Sequence[Any]) -> None:
        self.id = int(raw[0])
        self.created = int(raw[1])
        self.fresh = int(raw[2])
        self.type: str = raw[3]
        self.category: str = raw[4]
        self.section: str = raw[5]
        self.actor: str | None = raw[6]
        self.object: str | None = raw[7]
        self.bundle: str = raw[8]
        self.display: str = raw[9]
        self.read_at = int(raw[10]) if raw[10] is not None else None
        self.base = raw[11] == "1"
        # its state bits (tidings.domain.flags); none on a row written before they were kept
        self.flags = int(raw[12]) if len(raw) > 12 and raw[12] else 0

    def key(self, user: str) -> NotificationKey:
        return NotificationKey(user, self.id, self.display, self.base)


def rows_of(text: str) -> list[Row]:
    """The rows of ``json_rows`` (page.lua, view.lua)."""
    return [Row(r) for r in json.loads(text)]


def groups_of(rows: Sequence[InboxRow], found: Sequence[Sequence[Any]],
              bundles: Callable[[str], bool], hint: set[str]
              ) -> tuple[dict[str, GroupInfo], list[str]]:
    """The group info of the listed rows whose type bundles, from view.lua's groups
    (``{display, count, actor, ...}`` of the rows of the types in ``hint``), and the groups
    it did not read (a type not yet in the hint, which learns it)."""
    read = {display: info for display, *info in found}
    groups: dict[str, GroupInfo] = {}
    missing: list[str] = []
    for r in rows:
        if not bundles(r.type):
            continue
        if len(hint) < HINTS:
            hint.add(r.type)
        info = read.get(r.display_hash)
        if info is None:
            missing.append(r.display_hash)
        elif info[0] and r.display_hash not in groups:
            groups[r.display_hash] = GroupInfo(count=int(info[0]), actors=list(info[1:]),
                                               distinct_actors=len(info) - 1)
    return groups, missing
