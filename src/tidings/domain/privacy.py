"""Privacy rules (LiveJournal ESN's FilterSubs): who of an event's audience may hear of it.

A type names at most one rule in ``privacy``:

- ``"followers"``: only followers of the event's actor;
- ``"group:NAME"``: only members of the group NAME (``Tidings.add_member``);
- ``"rule:NAME"``: a Python callable registered in the process with ``Tidings.privacy_rule``,
  given the event and a batch of users and returning those allowed.

Fan-out applies it to every audience source, recipients included, chunk by chunk, before it
writes anything. This module only reads rule names; the checks against the store run there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FOLLOWERS = "followers"
GROUP = "group"
RULE = "rule"
NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")  # matched in full (fullmatch)


@dataclass(frozen=True)
class Privacy:
    """A parsed rule: its kind (followers, group, rule) and the group or rule name."""

    kind: str
    name: str | None = None


def parse_privacy(value: object) -> Privacy:
    """The rule a type's ``privacy`` names; ValueError (saying what is allowed) if none."""
    if value == FOLLOWERS:
        return Privacy(FOLLOWERS)
    if isinstance(value, str):
        kind, _, name = value.partition(":")
        if kind in (GROUP, RULE) and NAME.fullmatch(name):
            return Privacy(kind, name)
    raise ValueError(f"privacy must be 'followers', 'group:NAME' or 'rule:NAME' (NAME: 1-64 "
                     f"characters of [A-Za-z0-9_.:-]), not {value!r}")


def check_name(value: object, field: str) -> str:
    """A group or rule name, or ValueError."""
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise ValueError(f"{field} must be 1-64 characters of [A-Za-z0-9_.:-]")
    return value
