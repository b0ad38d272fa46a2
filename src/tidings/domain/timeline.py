"""Timelines as pure rules: the id range of a read, which model serves a source, and the
merge of a page from a mailbox and per-followee pulls (``docs/timelines.md``).

A source (a followed actor) is *pushed* (fan-out writes its posts into its followers'
mailboxes) or *pulled* (nothing is written; a read takes its newest posts from the events).
``push`` and ``pull`` decide it for every source, ``hybrid`` pulls only sources with more than
the celebrity threshold of followers; a per-source override wins over all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from tidings.domain.views import TimelineEntry

PUSH = "push"
PULL = "pull"
HYBRID = "hybrid"
MODELS = (PUSH, PULL, HYBRID)
SOURCE_MODELS = (PUSH, PULL)
NO_BOUND = 2**63 - 1


@dataclass(frozen=True)
class Bounds:
    """A read's event id range: strictly below ``below``, strictly above ``above``."""

    below: int | None = None
    above: int | None = None


@dataclass(frozen=True)
class SourceState:
    """What is stored of a source: followers, override, and from which event id on its posts
    are in mailboxes (``push_from``; None: the source is pulled)."""

    followers: int = 0
    model: str | None = None
    push_from: int | None = 0


@dataclass(frozen=True)
class ReadPlan:
    """What a store needs to decide each followee's cut itself (:func:`decide`,
    :func:`pull_cut`) and take a read's whole step at once: the deployment's model, its
    celebrity threshold and the event types a timeline shows."""

    model: str
    celebrity: int
    types: tuple[str, ...]


@dataclass(frozen=True)
class Candidate:
    """One event of a merged read step: from the mailbox (fan-out already decided the
    reader sees it) or ``pulled`` (the reader's rules still apply: ``exclude`` is the
    event's list of users it must not reach)."""

    entry: TimelineEntry
    pulled: bool = False
    exclude: tuple[str, ...] = ()


def decide(default: str, override: str | None, followers: int, celebrity: int) -> str:
    """``push`` or ``pull`` for a source: its override, else the deployment's model (under
    ``hybrid``: pull when the source has more than ``celebrity`` followers)."""
    if override in SOURCE_MODELS:
        return override
    if default == HYBRID:
        return PULL if followers > celebrity else PUSH
    return PULL if default == PULL else PUSH


def flip(state: SourceState, model: str, event_id: int) -> tuple[bool, int | None]:
    """Whether fan-out of ``event_id``, finding the source ``model``, changes its stored
    ``push_from``, and to what. A source turning to push is pushed from after this event: the
    event itself (perhaps only partly pushed, chunk by chunk) is still pulled."""
    if model == PULL:
        return state.push_from is not None, None
    if state.push_from is None:
        return True, event_id
    return False, state.push_from


def pushed_from_start(state: SourceState) -> bool:
    """Whether a source's stored state lets a push deployment read its posts from the mailbox
    above the floor without looking at it: no override, and pushed since its first post
    (``push_from`` 0). ``GraphStore.unpushed_followees`` lists the others."""
    return state.model is None and state.push_from == 0


def pull_cut(state: SourceState | None, model: str, floor: int) -> int:
    """The highest event id a read pulls of a source that is now ``model``. Pulling is always
    right (the events are the truth); the mailbox is trusted only for a source that is pushed
    now and was pushed when its posts were fanned out: above its ``push_from`` and above the
    mailbox's floor. Everything else is pulled."""
    if model == PULL or (state is not None and state.push_from is None):
        return NO_BOUND
    return max(state.push_from or 0 if state is not None else 0, floor)


class HasId(Protocol):
    @property
    def id(self) -> int: ...


T = TypeVar("T", bound=HasId)


def merge(lists: Iterable[Sequence[T]], limit: int) -> list[T]:
    """The newest ``limit`` distinct items (by id) of lists each newest first."""
    seen: dict[int, T] = {}
    for items in lists:
        for item in items:
            seen.setdefault(item.id, item)
    return [seen[i] for i in sorted(seen, reverse=True)[:limit]]
