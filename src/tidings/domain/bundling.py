"""Bundle hashes (which notifications may be shown as one) and count displays."""

from __future__ import annotations

import hashlib

UNREAD_CAP = 100
OTHERS_CAP = 99


def bundle_hash(rule: str, event_type: str, actor: str | None, obj: str | None,
                event_id: int) -> str:
    """The hash that groups one user's notifications of this event with others.

    ``none`` gives every event its own hash, so it never bundles.
    """
    if rule == "none":
        key = f"event\x00{event_id}"
    elif rule == "object":
        key = f"object\x00{event_type}\x00{obj or ''}"
    elif rule == "actor":
        key = f"actor\x00{event_type}\x00{actor or ''}"
    else:
        key = f"actor_object\x00{event_type}\x00{actor or ''}\x00{obj or ''}"
    return hashlib.sha1(key.encode()).hexdigest()[:32]


def display_hash(bundle: str, first_event_id: int) -> str:
    """A display group starts with its first event; later members reuse its hash."""
    return hashlib.sha1(f"{bundle}\x00{first_event_id}".encode()).hexdigest()[:32]


def count_display(count: int, cap: int = UNREAD_CAP) -> str:
    """'7' or, from ``cap`` on, '99+'."""
    return f"{cap - 1}+" if count >= cap else str(count)


ACTOR_SCAN = 500  # Echo's LIMIT for "X and N others": enough to find 99+ distinct actors


def join_or_start(bundle: str, event_id: int, base_group: str | None,
                  base_unread: bool) -> tuple[str, bool]:
    """Echo's rule: which display group a new notification goes into.

    It joins the newest group of its bundle while that group is unread (returning the group
    and True: the old base must step down); otherwise it starts a group of its own.
    """
    if base_group is not None and base_unread:
        return base_group, True
    return display_hash(bundle, event_id), False
