"""Following an unsubscribe link: check it, then turn its kind of mail off (or on again)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tidings.channels.email.tokens import (
    BadLink,
    StaleLink,
    Unsubscribe,
    check_address,
    read_unsubscribe_token,
    signing_secret,
)
from tidings.config import Config
from tidings.domain.preferences import email_switched
from tidings.domain.views import StoredEvent
from tidings.exceptions import LinkExpired, NotFound

Prefs = dict[str, Any]


def follow_link(config: Config, preferences: Callable[[str], Prefs],
                change: Callable[[str, Callable[[Prefs], Prefs]], Prefs],
                event: Callable[[str], StoredEvent], token: str, *, apply: bool,
                undo: bool) -> Unsubscribe:
    """What ``token`` turns off, after checking it was made here for its purpose
    (:class:`NotFound` if not) and sent to the user's present address (:class:`LinkExpired`
    if not). ``apply``: turn it off, or with ``undo`` on again."""
    try:
        secret = signing_secret(config)
        link = read_unsubscribe_token(secret, token)
        check_address(secret, link, (preferences(link.user).get("email") or {}).get("address"))
    except (RuntimeError, BadLink):
        raise NotFound("this unsubscribe link is not valid") from None
    except StaleLink as exc:
        raise LinkExpired(str(exc)) from None
    if link.purpose == "object":
        try:
            found = event(link.target).object
        except NotFound:
            found = None
        if found is None:
            raise NotFound("the notification this unsubscribe link was sent for is gone; "
                           "mute its page in your preferences")
        link = replace(link, target=found)
    if apply:
        change(link.user, lambda prefs: email_switched(prefs, link.purpose, link.target,
                                                       on=undo))
    return link
