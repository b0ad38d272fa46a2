"""The delivery records' format (table ``deliveries``): who received an event, a chunk of
users per row, instead of an (event, user) index on every notification (ESN's chunked fan-out
keeps the same kind of record per chunk job).

A record's ``users`` are user ids, sorted, joined by newlines and compressed with zlib:
sorted ids share their prefixes, so a user costs a few bytes. Its ``chunk`` is a 64-bit key
unique within the event: the first 64 bits of the SHA-1 of its first user id, as a signed
integer (a user holds an event once, so two records of one event start with the same user
only when that user's notification was removed and delivered again: the writer then merges
them, :mod:`tidings.store.sql.inbox.holders`). A record holds at most :data:`PART` users, so
its value stays small on every backend.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Iterator, Sequence

PART = 1000  # users a record holds at most
LEVEL = 9


def chunk_key(first_user: str) -> int:
    """The record key of a chunk whose least user id is ``first_user``: a signed 64-bit
    integer."""
    digest = hashlib.sha1(first_user.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def encode(users: Sequence[str]) -> bytes:
    """``users`` (sorted, distinct, no newline in any) packed into a record's value."""
    if any("\n" in user for user in users):
        raise ValueError("a user id with a newline cannot be recorded")
    return zlib.compress("\n".join(users).encode(), LEVEL)


def decode(value: bytes) -> list[str]:
    """The user ids of a record's value."""
    text = zlib.decompress(bytes(value)).decode()
    return text.split("\n") if text else []


def parts(users: Iterable[str]) -> Iterator[tuple[int, list[str], bytes]]:
    """The records of one event's ``users``: (chunk key, the part's users, its value), the
    users sorted, distinct, and cut in parts of at most :data:`PART`."""
    ordered = sorted(set(users))
    for start in range(0, len(ordered), PART):
        part = ordered[start:start + PART]
        yield chunk_key(part[0]), part, encode(part)
