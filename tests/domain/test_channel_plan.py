"""The pure channel rules: a subscription's channels limit what the preferences allow."""

from __future__ import annotations

from tidings.domain.preferences import Plan, within

EVERYTHING = Plan(web=True, email="daily", address="bob@example.org",
                  webhook="https://bob.example.org/hook")


def test_no_limit_keeps_the_plan() -> None:
    assert within(EVERYTHING, None) == EVERYTHING


def test_a_subscription_keeps_only_its_channels() -> None:
    assert within(EVERYTHING, frozenset({"email"})) == Plan(False, "daily", "bob@example.org",
                                                             None)
    assert within(EVERYTHING, frozenset({"web", "webhook"})) == Plan(
        True, None, None, "https://bob.example.org/hook")


def test_the_stricter_wins() -> None:
    web_off = Plan(web=False, email=None, address=None, webhook=None)
    assert within(web_off, frozenset({"web", "email"})) == web_off
