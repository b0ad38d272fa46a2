"""Timelines as pure rules: the range of a read, which model serves a source, and the
merge of a page from a mailbox and per-followee pulls (``docs/timelines.md``).

Every timeline, like every inbox, is in one order: newest first by the event's own time
(``created_at``), then by event id. A place in that order is a :data:`Position`,
(created_at, event id); read bounds, mailbox floors and ``push_from`` are positions.

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
Position = tuple[int, int]  # (created_at, event id)
START: Position = (0, 0)  # below every event: a floor of a complete mailbox
TOP: Position = (NO_BOUND, NO_BOUND)  # above every event: the cut of a source pulled whole


@dataclass(frozen=True)
class Bounds:
    """A read's range of positions: strictly below ``below``, strictly above ``above``."""

    below: Position | None = None
    above: Position | None = None


@dataclass(frozen=True)
class SourceState:
    """What is stored of a source: followers, override, and from which position on its posts
    are in mailboxes (``push_from``, exclusive; :data:`START`: from its first post; None: the
    source is pulled)."""

    followers: int = 0
    model: str | None = None
    push_from: Position | None = START


@dataclass(frozen=True)
class ReadPlan:
    """What a store needs to decide each followee's cut itself (:func:`decide`,
    :func:`pull_cut`) and take a read's whole step at once: the deployment's model, its
    celebrity threshold, the event types a timeline shows and the mailboxes' cap."""

    model: str
    celebrity: int
    types: tuple[str, ...]
    cap: int | None = None  # the mailbox's cap: a read shows its newest ``cap`` entries


def high_water(cap: int) -> int:
    """The most entries a mailbox capped at ``cap`` holds: ``cap`` plus a margin of a tenth
    (at least one). A write trims a mailbox only once it passes this mark, and then back to
    ``cap``: one trim per margin's worth of pushes, not one per push. A read with the cap
    shows the newest ``cap`` (the entries between are below its floor, and pulled)."""
    return cap + max(cap // 10, 1)


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


def flip(state: SourceState, model: str, event: Position
         ) -> tuple[bool, Position | None]:
    """Whether fan-out of the event at ``event``, finding the source ``model``, changes its
    stored ``push_from``, and to what. A source turning to push is pushed from after this event: the
    event itself (perhaps only partly pushed, chunk by chunk) is still pulled."""
    if model == PULL:
        return state.push_from is not None, None
    if state.push_from is None:
        return True, event
    return False, state.push_from


def pushed_from_start(state: SourceState) -> bool:
    """Whether a source's stored state lets a push deployment read its posts from the mailbox
    above the floor without looking at it: no override, and pushed since its first post
    (``push_from`` :data:`START`). ``GraphStore.unpushed_followees`` lists the others."""
    return state.model is None and state.push_from == START


def pull_cut(state: SourceState | None, model: str, floor: Position) -> Position:
    """The highest position a read pulls of a source that is now ``model``. Pulling is always
    right (the events are the truth); the mailbox is trusted only for a source that is pushed
    now and was pushed when its posts were fanned out: above its ``push_from`` and above the
    mailbox's floor. Everything else is pulled."""
    if model == PULL or (state is not None and state.push_from is None):
        return TOP
    pushed = state.push_from if state is not None and state.push_from is not None else START
    return max(pushed, floor)


class Placed(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def created_at(self) -> int: ...


T = TypeVar("T", bound=Placed)


def at(item: Placed) -> Position:
    """An item's position."""
    return (item.created_at, item.id)


def merge(lists: Iterable[Sequence[T]], limit: int) -> list[T]:
    """The newest ``limit`` distinct items (by event id) of lists each newest first, in the
    one order (:data:`Position`); the first list's copy of an event wins."""
    seen: dict[int, T] = {}
    for items in lists:
        for item in items:
            seen.setdefault(item.id, item)
    return sorted(seen.values(), key=at, reverse=True)[:limit]
