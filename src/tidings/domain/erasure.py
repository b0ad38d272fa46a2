"""Erasing a person from records that name them among others (GDPR Art. 17): the rules
every store applies alike to an event's lists, a queued job's arguments and its unique key,
and a failure's message. Pure: the stores read and write, this decides."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

# a job's arguments that are a bound of a range of user ids (a fan-out chunk's), not a user
BOUNDS = ("after", "upto")
ID_CHARS = "A-Za-z0-9_.:@-"  # tidings.domain.events.USER_ID's alphabet
ERASED = "[erased]"


def below(user: str) -> str:
    """A bound that stands in for ``user`` in a range of user ids once they are gone: every
    other id sorts on the same side of it as of ``user`` (in code point order, and it is
    used for both ends of a cut, so ranges cut there still meet). ``~`` sorts above every
    character an id may hold, and no id holds it."""
    return user[:-1] + chr(ord(user[-1]) - 1) + "~"


def without(users: Sequence[str], user: str) -> list[str]:
    """``users`` with ``user`` left out."""
    return [u for u in users if u != user]


def names(text: str, user: str) -> bool:
    """Whether ``text`` (JSON, a key, a message) may name ``user``: a quick test before a
    record is read and rewritten."""
    return user in text


def scrub_args(args: dict[str, Any], user: str) -> dict[str, Any] | None:
    """A queued job's arguments without ``user``, or None when the job is about the user
    (a value of theirs alone, such as ``user``, or a list of users left empty). A list loses
    them; a bound of a fan-out chunk's range becomes :func:`below` (the range keeps
    everyone else)."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if value == user:
            if key in BOUNDS:
                out[key] = below(user)
                continue
            return None
        if isinstance(value, list) and user in value:
            value = without(value, user)
            if not value and key == "users":
                return None
        out[key] = value
    return out


def scrub_key(key: str | None, args: dict[str, Any], user: str) -> str | None:
    """The unique key of a job kept once :func:`scrub_args` changed its arguments: a
    fan-out chunk's, which ends with its range's lower bound, ends with the new bound; any
    other that holds the user's id becomes a digest of itself (still unique, naming
    nobody)."""
    if key is None or not names(key, user):
        return key
    if args.get("after") == below(user) and key.endswith(":" + user):
        return key[:-len(user)] + below(user)
    return "erased:" + hashlib.sha1(key.encode()).hexdigest()


def scrub_text(text: str, user: str) -> str:
    """A message (a job failure's error) with ``user`` replaced where it stands as an id."""
    return re.sub(rf"(?<![{ID_CHARS}]){re.escape(user)}(?![{ID_CHARS}])", ERASED, text)
