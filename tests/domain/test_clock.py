"""The clock's RFC 3339 form of stored microseconds: what ``datetime.isoformat`` writes, for
any instant (the form written a second at a time must not differ from it anywhere)."""

from __future__ import annotations

from datetime import UTC, datetime

import hypothesis.strategies as st
from hypothesis import example, given

from tidings.clock import parse_rfc3339, to_rfc3339


def by_datetime(us: int) -> str:
    return datetime.fromtimestamp(us / 1_000_000, tz=UTC).isoformat().replace("+00:00", "Z")


@given(st.one_of(st.integers(0, 2**31 * 10**6 + 10**7),
                 st.integers(-(10**16), 10**17)))
@example(0)
@example(999_999)
@example(1_000_000)
@example(2**31 * 10**6 - 1)
@example(2**31 * 10**6)
@example(-1)
def test_the_rfc3339_form_is_isoformats(us: int) -> None:
    assert to_rfc3339(us) == by_datetime(us)


def test_it_reads_back_as_the_same_microseconds() -> None:
    for us in (0, 1, 1_764_000_000_123_456, 1_764_000_000_000_000):
        assert parse_rfc3339(to_rfc3339(us)) == us
    assert to_rfc3339(1_764_000_000_000_000) == "2025-11-24T16:00:00Z"
    assert to_rfc3339(1_764_000_000_000_001) == "2025-11-24T16:00:00.000001Z"
