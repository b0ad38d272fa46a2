"""The data set every layout is filled with: 1,000 events x 100 explicit recipients, half of a
type bundled by object (page-linked: 50 pages, each with a fixed set of 100 watchers, 10 events
a page), half not bundled (mention: 100 random recipients each). 1,000 users, 100,000
notifications. Deterministic (seeded), so every layout holds the same rows.

Also Echo's grouping as tidings decides it when nothing has been read: a bundled
notification joins the newest display group of its (user, bundle) pair."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

USERS = 1000
EVENTS = 1000
RECIPIENTS = 100
PAGES = 50
T0 = 1_780_000_000_000_000  # µs
# LEAN_SINGLETONS=1: nothing bundles (every notification its own display group: the worst case)
SINGLETONS = os.environ.get("LEAN_SINGLETONS") == "1"


@dataclass(frozen=True)
class Ev:
    id: int  # 1-based, in publish order
    type: str
    actor: str
    object: str
    created_at: int
    recipients: tuple[str, ...]
    payload: dict[str, object]


def user(i: int) -> str:
    return f"user{i:05d}"


def events() -> list[Ev]:
    rng = random.Random(40)
    watchers = {p: rng.sample(range(USERS), RECIPIENTS) for p in range(PAGES)}
    out: list[Ev] = []
    for i in range(EVENTS):
        actor = user(rng.randrange(USERS))
        if i % 2 == 0:
            page = rng.randrange(PAGES)
            out.append(Ev(i + 1, "page-linked", actor, f"page:Page_{page:03d}",
                          T0 + i * 1_000_000, tuple(user(u) for u in watchers[page]),
                          {"from": f"page:Source_{rng.randrange(10_000):05d}"}))
        else:
            out.append(Ev(i + 1, "mention", actor, f"page:Talk_{i:04d}",
                          T0 + i * 1_000_000,
                          tuple(user(u) for u in rng.sample(range(USERS), RECIPIENTS)),
                          {"section": f"Section {rng.randrange(100)}"}))
    return out


@dataclass
class Note:
    """One delivered notification as the lean layouts see it."""

    user: int  # user number
    event: int
    created_at: int
    group: int  # display group: the event id of its first member
    bundle: str  # bundle key ('' : never bundles)


def notes(evs: list[Ev]) -> list[Note]:
    """Every (user, event) notification with its display group, in delivery order."""
    open_group: dict[tuple[int, str], tuple[int, int]] = {}  # (user, bundle) -> (group, at)
    out: list[Note] = []
    for e in evs:
        bundle = (f"page-linked\x00{e.object}" if e.type == "page-linked" and not SINGLETONS
                  else "")
        for name in e.recipients:
            u = int(name[4:])
            if name == e.actor:  # an actor is not told of its own event
                continue
            created, group = e.created_at, e.id
            if bundle:
                found = open_group.get((u, bundle))
                if found is not None:
                    group, last = found
                    created = max(created, last + 1)
                open_group[(u, bundle)] = (group, created)
            out.append(Note(u, e.id, created, group, bundle))
    return out
