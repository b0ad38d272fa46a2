"""Checks every service shares: page limits and numeric ids from callers."""

from __future__ import annotations

from collections.abc import Iterable

from tidings.exceptions import InvalidInput

MAX_LIMIT = 100


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    return limit


def check_ids(ids: Iterable[str | int], field: str = "ids",
              what: str = "notification id") -> list[int]:
    """Positive 63-bit integers (or their decimal strings)."""
    result = []
    for value in ids:
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise InvalidInput(f"{field}: {value!r} is not a valid {what}", field=field) from None
        if number <= 0 or number >= 2**63:
            raise InvalidInput(f"{field}: {value!r} is not a valid {what}", field=field)
        result.append(number)
    return result
