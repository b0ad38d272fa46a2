"""W3's "events to ~43 followers": the seed's push workload (``../seeds/002_…``), many small
fan-outs instead of one big one.

``--push-users`` users (times ``--scale``) each follow 43 others at random (the seed's 42.9
followees a user), so each has about 43 followers. Each round publishes ``--push-events``
events, one after another through :meth:`Tidings.publish` (each durable on return), from random
users, while W ``tidings worker`` processes fan them out; the clock stops when the last inbox
row is committed, and the rows are then counted against the followers the actors have. The
baseline runs the seed's push statement for the same actors, committed per event
(:meth:`tidings_benchmarks.fanout_raw.RawFanout.push`), and the lean layout its own
(:meth:`tidings_benchmarks.lean_raw.LeanFanout.deliver`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rich.progress import Progress

from tidings.domain.events import Event
from tidings.engine import Tidings
from tidings_benchmarks import BenchFailure
from tidings_benchmarks.fanout_raw import EVENT_TYPE, OBJECT, RawFanout, write_follows
from tidings_benchmarks.jobwait import count_rows, wait_for_fanout, wait_for_queue
from tidings_benchmarks.lean_raw import LeanFanout
from tidings_benchmarks.processes import WorkerProcesses
from tidings_benchmarks.stores import database_of

FOLLOWEES = 43


@dataclass(frozen=True)
class Graph:
    """Users and how many followers each has."""

    users: list[str]
    followers: dict[str, int]

    def due(self, actors: Sequence[str]) -> int:
        """Inbox rows the events of ``actors`` must write."""
        return sum(self.followers.get(a, 0) for a in actors)


def load_graph(url: str, users: int, rng: random.Random, progress: Progress) -> Graph:
    """``users`` users, each following min(43, users - 1) others at random."""
    names = [f"u{i:07d}" for i in range(users)]
    followers: dict[str, int] = {}
    per_user = min(FOLLOWEES, users - 1)
    task = progress.add_task(f"loading {users:,} users, {per_user} follows each",
                             total=users * per_user)

    def pairs() -> Iterator[tuple[str, str]]:
        for i, follower in enumerate(names):
            for j in rng.sample(range(users - 1), per_user):
                followee = names[j if j < i else j + 1]  # anyone but the follower
                followers[followee] = followers.get(followee, 0) + 1
                yield follower, followee
            progress.advance(task, per_user)

    write_follows(url, pairs())
    progress.remove_task(task)
    return Graph(names, followers)


def tidings_round(t: Tidings, graph: Graph, actors: Sequence[str], procs: WorkerProcesses,
                  timeout: float) -> float:
    """Publish one event per actor; return the seconds until every inbox row is written."""
    db = database_of(t)
    before = count_rows(db)
    deadline = time.monotonic() + timeout
    started = time.perf_counter()
    for actor in actors:
        t.publish(Event(EVENT_TYPE.name, actor=actor, object=OBJECT))
    seconds = wait_for_fanout(db, started, deadline, procs, f"fan-out of {len(actors):,} events")
    written = count_rows(db) - before
    if written != graph.due(actors):
        raise BenchFailure(f"{written:,} inbox rows written for {graph.due(actors):,} due")
    wait_for_queue(db, deadline, procs)
    return seconds


def raw_round(raw: RawFanout, graph: Graph, actors: Sequence[str]) -> float:
    """The seed's push statement per actor, committed each; return the seconds."""
    written = 0
    now = time.time_ns() // 1000
    started = time.perf_counter()
    for actor in actors:
        written += raw.push(actor, now)
    seconds = time.perf_counter() - started
    if written != graph.due(actors):
        raise BenchFailure(f"the push statements wrote {written:,} rows for "
                           f"{graph.due(actors):,} due")
    return seconds


def lean_round(lean: LeanFanout, graph: Graph, actors: Sequence[str]) -> float:
    """The lean layout's fan-out per actor, committed each; return the seconds. Each event
    has a time of its own: a user's group rows are keyed by (user, created_at)."""
    written = 0
    now = time.time_ns() // 1000
    started = time.perf_counter()
    for i, actor in enumerate(actors):
        written += lean.deliver(actor, now + i)
    seconds = time.perf_counter() - started
    if written != graph.due(actors):
        raise BenchFailure(f"the lean statements wrote {written:,} rows for "
                           f"{graph.due(actors):,} due")
    return seconds
