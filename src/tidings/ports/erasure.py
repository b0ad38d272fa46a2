"""What erasing a person (GDPR Art. 17) asks of a store beyond the other ports: the events
they authored, retracted or not, and two sweeps that remove or rewrite every record naming
them. The rule (what goes first, what is retracted) is :mod:`tidings.services.people`'s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Erasure(Protocol):
    """One unit's erasure primitives. Each is idempotent: run again, it finds nothing."""

    def authored(self, user: str, *, after_id: int, limit: int) -> list[int]:
        """Ids of the events ``user`` authored above ``after_id``, retracted or not,
        ascending, at most ``limit``."""

    def forget(self, user: str, addresses: Sequence[str]) -> dict[str, int]:
        """Remove every record of the user's own: their row in the users, subscriptions,
        follows both ways, their mutes and others' mutes of them, group memberships,
        preferences, pending mail and mail state, the mail and webhook logs naming them,
        push subscriptions, the bounce state of ``addresses`` (theirs), their inbox, read
        watermarks and timeline. Returns how many records went, by kind."""

    def unlist(self, user: str, *, spare: int | None = None) -> dict[str, int]:
        """Take ``user`` out of the records that name them among others: other events'
        recipients and exclude lists, who-received-what records, queued jobs and failure
        records (a job about the user alone goes; a list in a job's arguments loses them),
        the subjects of mail sent to others (a title rendered from their event),
        and whatever else the store keeps of that kind (a hot store: its index of who holds
        an event and its journal). The job ``spare`` (the erasure's own) is left as it is.
        Returns how many records changed or went, by kind."""
