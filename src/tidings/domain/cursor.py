"""Opaque cursors over (time, event id), the key every list is ordered by."""

from __future__ import annotations

import base64
import binascii

from tidings.exceptions import InvalidCursor

_PREFIX = "t1"


def encode_cursor(created_at: int, event_id: int) -> str:
    raw = f"{_PREFIX}:{created_at}:{event_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, int]:
    """Return (created_at, event_id); raise :class:`InvalidCursor` for anything else."""
    if not isinstance(cursor, str) or not 1 <= len(cursor) <= 200:
        raise InvalidCursor("cursor is not one this server made", field="cursor")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        prefix, created, event = base64.urlsafe_b64decode(padded).decode().split(":")
        if prefix != _PREFIX:
            raise ValueError(prefix)
        created_at, event_id = int(created), int(event)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidCursor("cursor is not one this server made", field="cursor") from None
    # Both are BIGINT columns: anything outside 0..2**63-1 is a forged cursor (and would be a
    # driver error, not a clear 400, if it reached the database).
    if not (0 <= created_at < 2**63 and 0 <= event_id < 2**63):
        raise InvalidCursor("cursor is not one this server made", field="cursor")
    return created_at, event_id
