"""Key names. Every key of one user carries the hash tag ``{u:<user>}``, so one user's keys
share a cluster slot and one Lua script can touch them all; user ids hold no braces
(``tidings.domain.events.USER_ID``)."""

from __future__ import annotations


class Keys:
    """The key names under one prefix (``tidings:`` unless the URL says otherwise)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def user(self, user: str) -> str:
        """The user's key prefix: KEYS[1] of every per-user script."""
        return f"{self.prefix}{{u:{user}}}"

    def note(self, user: str, event_id: int) -> str:
        return f"{self.user(user)}:n:{event_id}"

    def markers(self, user: str) -> str:
        return f"{self.user(user)}:m"

    def timeline(self, user: str) -> str:
        return f"{self.user(user)}:tl"

    def timeline_floor(self, user: str) -> str:
        return f"{self.user(user)}:tlf"

    def recipients(self, event_id: int) -> str:
        """The users holding a notification of this event (retraction and retention)."""
        return f"{self.prefix}{{e:{event_id}}}:u"

    def live(self) -> str:
        """The pub/sub channel of inbox changes."""
        return f"{self.prefix}live"


def opt(value: str | None) -> str:
    """An optional value as a script argument: '' for none, '=' + the value otherwise."""
    return "" if value is None else "=" + value
