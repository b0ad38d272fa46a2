"""Read and seen state from narrow watermarks (Gazelle's witness tables) plus per-row marks.

A notification is unread when it has no explicit read mark and its ``fresh_at`` (delivery
time, or the time it was marked unread again) is after every watermark that covers it: the
user's "all read up to" mark and any per-type, per-category or per-section catch-up mark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SCOPE_KINDS = ("type", "category", "section")


@dataclass(frozen=True)
class Markers:
    """One user's watermarks, read in one small query."""

    all: int = 0
    seen: int = 0
    scoped: Mapping[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Mapping[str, int]) -> Markers:
        scoped: dict[tuple[str, str], int] = {}
        for scope, until in rows.items():
            kind, _, value = scope.partition(":")
            if kind in SCOPE_KINDS and value:
                scoped[(kind, value)] = until
        return cls(all=rows.get("all", 0), seen=rows.get("seen", 0), scoped=scoped)

    def effective_scoped(self) -> dict[tuple[str, str], int]:
        """Scoped marks that say more than the 'all' mark does."""
        return {key: until for key, until in self.scoped.items() if until > self.all}

    def is_unread(self, read_at: int | None, fresh_at: int, type: str, category: str,
                  section: str) -> bool:
        if read_at is not None or fresh_at <= self.all:
            return False
        values = {"type": type, "category": category, "section": section}
        return all(
            fresh_at > until or values[kind] != value
            for (kind, value), until in self.scoped.items()
        )

    def is_seen(self, unread: bool, fresh_at: int) -> bool:
        return not unread or fresh_at <= self.seen

    def unseen(self) -> Markers:
        """Watermarks under which "unread" means "unread and not yet seen": the seen mark
        counts as an "all read up to" mark. What a badge counts, as Echo's does."""
        return Markers(all=max(self.all, self.seen), seen=self.seen, scoped=self.scoped)


def scope_name(kind: str, value: str) -> str:
    return f"{kind}:{value}"
