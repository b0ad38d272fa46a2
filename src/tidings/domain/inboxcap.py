"""The inbox cap's rule: which deliveries check an inbox's size.

An inbox capped at N keeps its newest N notifications by (created_at, event id). Counting
every inbox on every delivery costs a write per recipient (a stored count) or a read of N
index entries; instead about one delivery in :func:`margin` per user checks, and a check
that finds more than N notifications trims the inbox back to its newest N. Which deliveries
check is decided by a hash of (user, event id), with no state: a retried delivery, or the same
events delivered in other batches, decide the same.

So an inbox holds its newest N, plus the notifications delivered since its last check: about
one margin on average, a tenth of the cap. The excess is geometric: after a check it passes
k margins only if none of the next k margins of deliveries checks, a chance of about e^-k (5 %
for three margins, 0.1 % for seven). Nothing newer than a kept notification is ever removed:
a trim removes the oldest.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence


def margin(cap: int) -> int:
    """How many deliveries a user gets per check of their inbox, on average: a tenth of the
    cap, at least one (a cap under 20 is checked on every delivery, so it is exact)."""
    return max(cap // 10, 1)


def _seed(event_id: int) -> int:
    """The CRC-32 of the event's part of a (user, event id) pair, which each user continues."""
    return zlib.crc32(b"%d\x1f" % event_id)


def _mixed(user: str, seed: int) -> int:
    """The pair's hash: the CRC-32 continued with the user, then MurmurHash3's finalizer. A
    CRC is linear, so over one user's consecutive event ids its remainders modulo the margin
    clump (runs of 15 margins without a check where 8 is the most expected); the finalizer
    spreads them as a random choice would."""
    h = zlib.crc32(user.encode(), seed)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def checks(user: str, event_id: int, cap: int) -> bool:
    """Whether delivering this event to this user checks the user's inbox against ``cap``:
    one (user, event) pair in :func:`margin`, by a hash that is the same in every process."""
    every = margin(cap)
    return every == 1 or _mixed(user, _seed(event_id)) % every == 0


def checked(written: Iterable[tuple[int, Sequence[str]]], cap: int) -> list[str]:
    """The users whose inbox a unit checks, given the (event id, users newly written) of its
    deliveries: those with a delivery that :func:`checks`, sorted."""
    every = margin(cap)
    found: set[str] = set()
    for event_id, users in written:
        if every == 1:
            found.update(users)
            continue
        seed = _seed(event_id)
        found.update(u for u in users if _mixed(u, seed) % every == 0)
    return sorted(found)
