"""An inbox item's state as the bits of one small integer: the ``flags`` of a row.

The lean inbox's group row (``docs/design/lean-inbox.md``, layout D) keeps everything a
person does to an item, and why it reached them, in one SMALLINT beside its type; today's
rows carry the same column (migration 0035), so the bits are the same in every store and
survive the move to group rows unchanged:

==========  ====================================================================
bit 0       read (kept as ``read_at`` on today's rows; reserved here)
bit 1       the type bundles (reserved; today's rows say it by ``bundle_base``)
bit 2       archived ("done"): out of the inbox, listed under ``archived``
bit 3       saved: kept in the inbox and listed under ``saved`` too
bits 4-6    the reason it arrived (:data:`REASONS`; 0 is "not known")
bit 7       snoozed: out of the inbox until a time kept beside the row
bit 8       some members read (a per-member bitmap follows; reserved)
bits 9-15   free
==========  ====================================================================
"""

from __future__ import annotations

READ = 1 << 0
BUNDLES = 1 << 1
ARCHIVED = 1 << 2
SAVED = 1 << 3
REASON_SHIFT = 4
REASON_MASK = 0b111 << REASON_SHIFT
SNOOZED = 1 << 7
SOME_READ = 1 << 8
# what takes an item out of the inbox (and its unread count) while set
HIDDEN = ARCHIVED | SNOOZED

# the states an inbox list shows (``state=``): the bits a row must have, and must not have
STATES: dict[str, tuple[int, int]] = {
    "inbox": (0, HIDDEN),  # neither archived nor snoozed (saved items stay)
    "archived": (ARCHIVED, 0),
    "saved": (SAVED, 0),
    "snoozed": (SNOOZED, 0),
}
INBOX = "inbox"


def in_state(flags: int, state: str | None) -> bool:
    """Whether a row with ``flags`` lists under ``state`` (None: under every state)."""
    if state is None:
        return True
    having, lacking = STATES[state]
    return flags & having == having and not flags & lacking

# why a notification reached its user, the most personal first: its code is its position + 1
# (0 stays "not known", as on rows delivered before reasons were kept)
REASONS: tuple[str, ...] = ("recipient", "mention", "subscribed", "following", "group")


def reason_code(reason: str) -> int:
    """The bits of ``reason`` in ``flags`` (a ValueError for a name not in :data:`REASONS`)."""
    return (REASONS.index(reason) + 1) << REASON_SHIFT


def reason_of(flags: int) -> str | None:
    """The reason kept in ``flags``, or None where none was kept."""
    code = (flags & REASON_MASK) >> REASON_SHIFT
    return REASONS[code - 1] if 0 < code <= len(REASONS) else None


def most_personal(reasons: set[str] | frozenset[str]) -> str | None:
    """Of several reasons that reached one user, the one that shows: the most personal."""
    return next((r for r in REASONS if r in reasons), None)


def beyond_cap(rows: list[tuple[int, int, int]], cap: int) -> list[tuple[int, int]]:
    """Of a user's rows as (created_at, event id, flags), the positions a cap of ``cap``
    removes: the newest ``cap`` are kept, saved ones before the others (a saved item goes only
    once there are more saved ones than the cap), so the unsaved ones go first, oldest first."""
    ranked = sorted(rows, key=lambda r: (not r[2] & SAVED, -r[0], -r[1]))
    return sorted((r[0], r[1]) for r in ranked[cap:])
