"""W1's data set (the timelines seed, ``../seeds/002_…``): users, a follow graph, messages, and
their bulk load into tidings' tables.

``10,000 * scale`` users, ``1,000,000 * scale`` messages from uniformly random senders, bodies
of 40 to 120 random characters, and ``42.9 * users`` follow edges (42.9 followees per user on
average), in one of two graphs:

* ``uniform`` — the seed's: G(n, m), every (follower, followee) pair equally likely;
* ``skewed`` — the same number of edges, each followee drawn with a power-law weight
  (rank ** -0.8, the ranks shuffled over the users), so the mean is the same but a few users
  have most followers: at full scale the top four or so have over 5,000.

The history is not what the bench measures, so it is written in bulk (``COPY`` on PostgreSQL,
multi-row ``INSERT`` elsewhere) with the rows publishing would have written: the events
(``bench.post``, one per message, ids 1…N in time order), the follows, and for the models that
write mailboxes one set-based ``INSERT … SELECT`` per block of followers that keeps, for each
follower, the newest ``timeline_cap`` events of the followees whose posts are pushed, and a
share of the high-water mark's margin that varies by follower (:func:`held`).
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
import string
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from tidings.domain.events import Event
from tidings.domain.timeline import high_water
from tidings.domain.types import EventType
from tidings_benchmarks.raw import RawConnection

FOLLOWEES = 42.9
SKEW = 0.8
GRAPHS = ("uniform", "skewed")
POST = EventType("bench.post", category="bench", channels=(),
                 audience=("actor_followers",), label="Post",
                 description="A message shown in the timelines of its author's followers.")
_ALPHABET = string.ascii_lowercase + "      "
BLOCK = 500  # followers per INSERT … SELECT of their mailboxes


def user_id(n: int) -> str:
    """The tidings user id of the seed's user number ``n`` (1-based)."""
    return f"u{n:06d}"


@dataclass(frozen=True)
class Data:
    """One generated data set: ``edges`` are (follower, followee) user numbers, ``senders[i]``
    and ``bodies[i]`` are those of message ``i + 1``."""

    graph: str
    users: int
    edges: list[tuple[int, int]]
    senders: list[int]
    bodies: list[str]

    @property
    def messages(self) -> int:
        return len(self.senders)

    def followers(self) -> Counter[int]:
        return Counter(b for _, b in self.edges)

    def celebrities(self, threshold: int) -> list[int]:
        """Users with more than ``threshold`` followers (hybrid reads their posts)."""
        return sorted(u for u, n in self.followers().items() if n > threshold)


def sizes(scale: float) -> tuple[int, int]:
    """(users, messages) at this scale: 10,000 and 1,000,000 at 1.0."""
    users = max(20, round(10_000 * scale))
    return users, max(users, round(1_000_000 * scale))


def generate(graph: str, scale: float, seed: int) -> Data:
    """The data set of ``graph`` at ``scale``; the same seed gives the same data."""
    rng = random.Random(f"{seed}:{graph}")
    users, messages = sizes(scale)
    target = min(round(users * FOLLOWEES), users * (users - 1))
    edges: set[tuple[int, int]] = set()
    if graph == "uniform":
        while len(edges) < target:
            a, b = rng.randint(1, users), rng.randint(1, users)
            if a != b:
                edges.add((a, b))
    elif graph == "skewed":
        ranked = list(range(1, users + 1))
        rng.shuffle(ranked)
        cumulative = list(itertools.accumulate((r + 1) ** -SKEW for r in range(users)))
        top = cumulative[-1]
        while len(edges) < target:
            a = rng.randint(1, users)
            b = ranked[min(bisect.bisect(cumulative, rng.random() * top), users - 1)]
            if a != b:
                edges.add((a, b))
    else:
        raise ValueError(f"unknown graph {graph!r}; use {', '.join(GRAPHS)}")
    pool = "".join(rng.choice(_ALPHABET) for _ in range(100_000))
    bodies = []
    for _ in range(messages):
        length = rng.randint(40, 120)
        at = rng.randrange(0, len(pool) - length)
        bodies.append(pool[at:at + length])
    return Data(graph, users, sorted(edges), [rng.randint(1, users) for _ in range(messages)],
                bodies)


def new_messages(data: Data, count: int, rng: random.Random) -> list[tuple[int, str]]:
    """``count`` fresh (sender, body) pairs for a submit round."""
    return [(rng.randint(1, data.users), data.bodies[rng.randrange(data.messages)])
            for _ in range(count)]


def payload(body: str) -> dict[str, str]:
    return {"text": body}


def created_at(message: int, now: int, messages: int) -> int:
    """History is dated in the past, 1 ms apart, message N a second before ``now``."""
    return now - 1_000_000 - (messages - message) * 1000


def load_history(url: str, data: Data, now: int, progress: Callable[[int], object]) -> None:
    """Write the users, follows and events of ``data`` into an empty tidings database."""
    with RawConnection(url, autocommit=False) as raw:
        raw.write_rows("users", ("user_id", "created_at"),
                       ((user_id(n), now) for n in range(1, data.users + 1)))
        raw.write_rows("follows", ("follower", "followee", "created_at"),
                       ((user_id(a), user_id(b), now) for a, b in data.edges))
        raw.commit()
        progress(0)

        def rows() -> Iterator[tuple[object, ...]]:
            for i, (sender, body) in enumerate(zip(data.senders, data.bodies, strict=True), 1):
                event = Event(POST.name, actor=user_id(sender), payload=payload(body))
                yield (i, POST.name, event.actor, json.dumps(event.payload), "[]", "[]",
                       event.body_hash(), created_at(i, now, data.messages))
                if i % 10_000 == 0:
                    progress(10_000)

        raw.write_rows("events", ("id", "type", "actor", "payload", "recipients", "exclude",
                                  "body_hash", "created_at"), rows(), batch=2000)
        progress(data.messages % 10_000)
        if raw.backend == "postgresql":  # explicit ids: move the sequence past them
            raw.execute("SELECT setval(pg_get_serial_sequence('events', 'id'), "
                        "(SELECT max(id) FROM events))")
        raw.commit()


def mailbox_sql(celebrities: Sequence[int], spread: int = 1, backend: str = "") -> str:
    """The capped mailboxes of one block of followers (``%s`` placeholders: type, the first
    and last follower of the block, the cap; ``spread``: see :func:`held`)."""
    return ("INSERT INTO timelines (user_id, event_id, created_at) "
            + mailbox_select(celebrities, spread, backend))


def spread_of(cap: int) -> int:
    """How many sizes a mailbox of a running deployment holds between trims: the cap to its
    high-water mark."""
    return high_water(cap) - cap + 1


def held(spread: int, backend: str) -> str:
    """SQL of how many entries the follower ``f.follower`` holds (``%s``: the cap): the cap,
    plus a share of the margin that varies by follower (``spread`` sizes, spread evenly), as
    mailboxes trimmed back to the cap at different times hold in a running deployment."""
    if spread <= 1:
        return "%s"
    if backend == "mysql":
        return f"(%s + MOD(CAST(SUBSTR(f.follower, 2) AS SIGNED) * 7919, {int(spread)}))"
    x = "(CAST(SUBSTR(f.follower, 2) AS INTEGER) * 7919)"  # integer division on both
    return f"(%s + {x} - ({x} / {int(spread)}) * {int(spread)})"


def _ranked(celebrities: Sequence[int], spread: int = 1, backend: str = "") -> str:
    """Each follower's pushed events of one block, numbered newest first (by time, then id:
    the timeline's order), with how many it holds (``keep``: :func:`held`)."""
    skip = ""
    if celebrities:
        skip = " AND f.followee NOT IN ({})".format(
            ", ".join(f"'{user_id(c)}'" for c in celebrities))
    return ("(SELECT f.follower, e.id, e.created_at, "
            "ROW_NUMBER() OVER (PARTITION BY f.follower ORDER BY e.created_at DESC, e.id DESC)"
            f" AS n, {held(spread, backend)} AS keep "
            "FROM follows f JOIN events e ON e.actor = f.followee "
            f"WHERE e.type = %s AND f.follower BETWEEN %s AND %s{skip}) ranked")


def mailbox_select(celebrities: Sequence[int], spread: int = 1, backend: str = "") -> str:
    """(follower, event id, created at) of :func:`mailbox_sql`'s rows (placeholders: the
    cap, then type, the first and last follower of the block)."""
    return (f"SELECT follower, id, created_at FROM {_ranked(celebrities, spread, backend)} "
            "WHERE n <= keep")


def state_select(celebrities: Sequence[int], spread: int = 1, backend: str = "") -> str:
    """(follower, entries, floor_at, floor_id) of the same mailboxes (placeholders as
    :func:`mailbox_select`): the floor is the position of the newest event the cap left out
    ((0, 0): none), below which reads pull, as after the engine's own trims."""
    return ("SELECT follower, SUM(CASE WHEN n <= keep THEN 1 ELSE 0 END), "
            "COALESCE(MAX(CASE WHEN n = keep + 1 THEN created_at END), 0), "
            "COALESCE(MAX(CASE WHEN n = keep + 1 THEN id END), 0) "
            f"FROM {_ranked(celebrities, spread, backend)} GROUP BY follower")


def blocks(data: Data) -> Iterator[tuple[int, int]]:
    """(first, last) user numbers of each block of followers."""
    for start in range(1, data.users + 1, BLOCK):
        yield start, min(start + BLOCK - 1, data.users)


def prepare_model(url: str, data: Data, model: str, cap: int, threshold: int,
                  progress: Callable[[int], object], *, mailboxes: bool = True) -> int:
    """The timeline tables as the engine under ``model`` would have left them after the
    history: every source's follower count and whether its posts are pushed
    (``timeline_sources``), and unless ``model`` is pull (or ``mailboxes`` is False: Redis
    holds them) each follower's newest ``cap`` pushed events (``timelines``) with its entry
    count and floor (``timeline_state``). Returns the mailbox rows written."""
    celebrities = data.celebrities(threshold) if model == "hybrid" else []
    pulled_over = {"push": 2**62, "pull": -1, "hybrid": threshold}[model]
    written = 0
    with RawConnection(url, autocommit=False) as raw:
        for table in ("timelines", "timeline_state", "timeline_sources"):
            raw.execute(empty_table(raw.backend, table))
        raw.execute(raw.sql(
            "INSERT INTO timeline_sources (actor, followers, model, push_from, push_from_at) "
            "SELECT followee, COUNT(*), NULL, CASE WHEN COUNT(*) > %s THEN NULL ELSE 0 END, "
            "CASE WHEN COUNT(*) > %s THEN NULL ELSE 0 END "
            "FROM follows GROUP BY followee"), (pulled_over, pulled_over))
        raw.commit()
        if model == "pull" or not mailboxes:
            progress(data.users)
            return 0
        spread = spread_of(cap)
        rows, state = raw.sql(mailbox_sql(celebrities, spread, raw.backend)), raw.sql(
            "INSERT INTO timeline_state (user_id, entries, floor_at, floor_id) "
            + state_select(celebrities, spread, raw.backend))
        for first, last in blocks(data):
            block = (POST.name, user_id(first), user_id(last))
            written += raw.execute(rows, (cap, *block))
            raw.execute(state, (cap, *block))
            raw.commit()
            progress(last - first + 1)
    return written


def empty_table(backend: str, table: str) -> str:
    return f"DELETE FROM {table}" if backend == "sqlite" else f"TRUNCATE TABLE {table}"


def count_new_mailbox_rows(url: str, messages: int) -> int:
    """Mailbox rows of the events after the history's ``messages``."""
    with RawConnection(url) as raw:
        rows = raw.fetch(raw.sql("SELECT count(*) FROM timelines WHERE event_id > %s"),
                         (messages,))
    return int(rows[0][0])


def mailbox_states(url: str) -> dict[str, tuple[int, int, int]]:
    """Each mailbox's stored (entries bound, floor id, floor time), to restore after a
    submit round."""
    with RawConnection(url) as raw:
        return {str(u): (int(n), int(f), int(a)) for u, n, f, a in raw.fetch(
            "SELECT user_id, entries, floor_id, floor_at FROM timeline_state")}


def remove_submitted(url: str, messages: int,
                     before: dict[str, tuple[int, int, int]] | None = None,
                     celebrities: Sequence[int] = ()) -> None:
    """Delete what submit rounds added after the history (events, mailbox rows, jobs), so
    every model starts from the same data. With ``before`` (:func:`mailbox_states` taken
    before the round) the mailboxes are put back as they were too: the history entries the
    round's cap trimmed (above the floor a mailbox had, at or below the one it has now) go
    back in and the bounds and floors are restored, so each round starts from full mailboxes
    whose bounds are their true sizes (a bound left counting deleted rows would make the next
    round's cap trim rows that are still wanted)."""
    skip = "".join(f" AND f.followee <> '{user_id(c)}'" for c in celebrities)
    with RawConnection(url, autocommit=False) as raw:
        now = {str(u): int(f) for u, f in raw.fetch("SELECT user_id, floor_id FROM timeline_state")}
        raw.execute(raw.sql("DELETE FROM timelines WHERE event_id > %s"), (messages,))
        raw.execute(raw.sql("DELETE FROM events WHERE id > %s"), (messages,))
        raw.execute("DELETE FROM jobs")
        refill = raw.sql(
            "INSERT INTO timelines (user_id, event_id, created_at) SELECT f.follower, e.id, "
            "e.created_at FROM follows f JOIN events e ON e.actor = f.followee WHERE "
            f"f.follower = %s AND e.type = %s AND e.id > %s AND e.id <= %s{skip}")
        restore = raw.sql("UPDATE timeline_state SET entries = %s, floor_id = %s, "
                          "floor_at = %s WHERE user_id = %s")
        # the history's times rise with its ids: a range of ids is a range of positions
        for user, (entries, floor, floor_at) in (before or {}).items():
            if now.get(user, floor) > floor:
                raw.execute(refill, (user, POST.name, floor, min(now[user], messages)))
            raw.execute(restore, (entries, floor, floor_at, user))
        raw.commit()


def naive_page(url: str, user: int, below: int | None) -> list[int]:
    """The ids a first (or later) page must show, by the seed's naive join: the check that
    the bulk load and the engine agree."""
    with RawConnection(url) as raw:
        rows = raw.fetch(raw.sql(
            "SELECT e.id FROM events e JOIN follows f ON f.followee = e.actor "
            "WHERE f.follower = %s AND e.id < %s AND e.retracted_at IS NULL "
            "ORDER BY e.id DESC LIMIT 20"), (user_id(user), below or 2**62))
    return [int(r[0]) for r in rows]


def elapsed(started: float) -> float:
    return round(time.perf_counter() - started, 2)
