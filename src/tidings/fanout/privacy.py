"""Applying a type's privacy rule (``tidings.domain.privacy``) to a chunk of its audience.

Every audience source passes through here, recipients included, before fan-out writes anything.
A ``rule:NAME`` that this process has not registered fails the job (it is retried, perhaps by a
process that has it): an event is never delivered past a rule nobody checked.
"""

from __future__ import annotations

from collections.abc import Sequence

from tidings.domain.privacy import FOLLOWERS, GROUP, parse_privacy
from tidings.domain.types import EventType
from tidings.domain.views import StoredEvent
from tidings.exceptions import JobError
from tidings.jobs.context import JobContext
from tidings.ports import Tx


def permitted(ctx: JobContext, tx: Tx, event: StoredEvent, event_type: EventType,
            users: Sequence[str]) -> list[str]:
    """Those of ``users`` the type's privacy rule lets hear of ``event``, in order."""
    if event_type.privacy is None or not users:
        return list(users)
    rule = parse_privacy(event_type.privacy)
    if rule.kind == FOLLOWERS:
        keep = tx.graph.following(users, event.actor) if event.actor is not None else set()
    elif rule.kind == GROUP:
        assert rule.name is not None
        keep = tx.graph.members_among(rule.name, users)
    else:
        check = ctx.privacy_rules.get(rule.name or "")
        if check is None:
            raise JobError(f"privacy rule {rule.name!r} of type {event_type.name!r} is not "
                           "registered in this process (Tidings.privacy_rule)")
        keep = set()
        batch = max(1, ctx.config.chunk_size)
        for start in range(0, len(users), batch):
            part = list(users[start:start + batch])
            given = set(part)
            keep.update(u for u in check(event, part) if u in given)
    return [u for u in users if u in keep]
