"""The inbox cap's rule (``tidings.domain.inboxcap``): which deliveries check an inbox, and
the sizes that gives."""

from __future__ import annotations

import itertools

from tidings.domain.inboxcap import checked, checks, margin


def test_the_margin_is_a_tenth_of_the_cap_and_at_least_one() -> None:
    assert [margin(c) for c in (1, 9, 19, 20, 99, 10_000)] == [1, 1, 1, 2, 9, 1_000]


def test_a_cap_under_twenty_checks_every_delivery() -> None:
    assert all(checks(f"u{u}", e, 19) for u in range(50) for e in range(50))


def test_about_one_delivery_in_a_margin_checks_and_always_the_same_ones() -> None:
    pairs = [(f"user{u}", e) for u in range(400) for e in range(1, 501)]  # 200,000
    chosen = [p for p in pairs if checks(*p, 10_000)]
    assert 150 <= len(chosen) <= 250  # 200 expected: a margin of 1,000
    assert chosen == [p for p in pairs if checks(*p, 10_000)]
    assert len({u for u, _ in chosen}) > 120  # spread over the users
    per_event = [sum(1 for u in range(400) if checks(f"user{u}", e, 20)) for e in range(1, 51)]
    assert min(per_event) >= 150 and max(per_event) <= 250  # half of 400, event by event


def test_checked_names_the_users_a_unit_checks() -> None:
    written = [(e, [f"u{u}" for u in range(30)]) for e in range(1, 11)]
    expected = sorted({u for e, users in written for u in users if checks(u, e, 100)})
    assert checked(written, 100) == expected
    assert 0 < len(expected) < 30
    assert checked(written, 5) == sorted(f"u{u}" for u in range(30))
    assert checked([], 100) == []


def test_an_inbox_holds_the_cap_and_about_a_margin_more() -> None:
    """One user's size through 200,000 deliveries, trimmed to the cap when a check finds
    more: never under the cap once filled, a margin over it on average, and rarely far."""
    cap = 1_000
    size, sizes = 0, []
    for event_id in itertools.islice(itertools.count(1), 200_000):
        size += 1
        if checks("ann", event_id, cap) and size > cap:
            size = cap
        if event_id > cap:
            sizes.append(size)
    excess = [s - cap for s in sizes]
    assert min(sizes) >= cap
    assert 0.7 * margin(cap) <= sum(excess) / len(excess) <= 1.3 * margin(cap)
    assert sum(1 for x in excess if x > 3 * margin(cap)) / len(excess) < 0.1
    assert max(excess) < 12 * margin(cap)
