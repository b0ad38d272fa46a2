"""W1 — timelines (the seed ``../seeds/002_…``): push, pull and hybrid through the engine, beside
the seed's own SQL run on the same database and the same data.

For each graph (``uniform``, ``skewed``; :mod:`tidings_benchmarks.timeline_data`) the history is
bulk-loaded once; then for each model the mailboxes it would have written are rebuilt in bulk
(push: every follower's newest ``timeline_cap``; hybrid: the same without the posts of users
with more than ``--celebrity-followers`` followers; pull: none), the planner's statistics
refreshed, five users' first and second pages checked against the seed's naive join, and each
round times, one request after another from one client:

* **first page** — ``Tidings.timeline(user, limit=20)`` of random users;
* **later page** — the page after it (the first page's cursor, fetched untimed before);
* **submit** — ``--submits`` new messages, ``--submit-batch`` at a time: each block
  ``publish_many``-ed (durable on return, one transaction), then the fan-out jobs run in the
  bench's process until the queue is empty (``run_jobs``: fan-out jobs of one claim in one
  unit): a block's clock stops when its last mailbox row is committed. The rows are then
  counted against the followers due.

With ``--baseline`` the seed's statements (:mod:`tidings_benchmarks.timeline_seed`; on PostgreSQL
the raw limit's too) run for the same users and the same messages, the sides taking turns in
blocks (pages: 20 requests; submits: one ``--submit-batch``), the sides' order rotating block by
block (:func:`~tidings_benchmarks.measure.turns`; hybrid is compared with the seed's push).
Storage is measured once per model, before the submit rounds. On PostgreSQL the push submit
also runs beside its SQL floor (:mod:`tidings_benchmarks.timeline_floor`: tidings' own
statements for each block, with the cap and without), which tells the database's share of
the figure from tidings'.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from functools import partial
from typing import Any, Protocol

from rich.progress import Progress

from tidings.config import Config
from tidings.engine import Tidings
from tidings_benchmarks import BenchFailure, timeline_seed
from tidings_benchmarks import timeline_data as tl
from tidings_benchmarks.measure import Timed, alternating, frozen_heap
from tidings_benchmarks.report import header
from tidings_benchmarks.storage import table_bytes
from tidings_benchmarks.stores import BenchStore
from tidings_benchmarks.timeline_floor import FloorPostgres
from tidings_benchmarks.timeline_report import summarise

MODELS = ("push", "pull", "hybrid")
FIGURES = ("submit", "first page", "later page")
CHECKED_USERS = 5


@dataclass(frozen=True)
class TimelineSettings:
    store: str | None
    scale: float = 0.01
    graphs: tuple[str, ...] = tl.GRAPHS
    models: tuple[str, ...] = MODELS
    rounds: int = 3
    ops: int = 300
    submits: int = 500
    seed: int = 1
    baseline: bool = False
    celebrity_followers: int | None = None
    submit_batch: int = 100

    def threshold(self) -> int:
        """Hybrid's celebrity threshold: the option, else 5,000 followers * scale."""
        if self.celebrity_followers is not None:
            return self.celebrity_followers
        return max(1, round(5000 * self.scale))


def engine(url: str, model: str, settings: TimelineSettings,
           hot_url: str | None = None) -> Tidings | None:
    """An engine on ``url`` configured for ``model`` (None if this build has no such model)."""
    known = {f.name for f in fields(Config)}
    extra: dict[str, Any] = {}
    if "timeline_model" in known:
        extra["timeline_model"] = model
    elif model != "push":
        return None
    if "celebrity_followers" in known:
        extra["celebrity_followers"] = settings.threshold()
    t = Tidings(Config(database_url=url, hot_store_url=hot_url, **extra), types=[tl.POST],
                pool_size=2)
    t.define_type(tl.POST)
    return t


def now_us() -> int:
    return time.time_ns() // 1000


class Seed(Protocol):
    """The baseline's side: the seed's statements (SQL) or raw_redis.py's commands."""

    def push_submit(self, sender: int, body: str) -> int: ...

    def pull_submit(self, sender: int, body: str) -> object: ...

    def push_page(self, user: int, below: int | None = None) -> Sequence[Sequence[object]]: ...

    def pull_page(self, user: int, below: int | None = None) -> Sequence[Sequence[object]]: ...


class Phases:
    """One model's timed phases on one graph: tidings' and the baseline's, by figure."""

    def __init__(self) -> None:
        self.tidings: dict[str, list[Timed]] = {f: [] for f in FIGURES}
        self.baseline: dict[str, list[Timed]] = {f: [] for f in FIGURES}
        self.raw: dict[str, list[Timed]] = {f: [] for f in FIGURES}  # the raw limit's
        # push submit's SQL floor (timeline_floor), with the cap and without
        self.floor: dict[str, list[Timed]] = {"submit": []}
        self.floor_uncapped: dict[str, list[Timed]] = {"submit": []}


def ids_of(page: Any) -> list[int]:
    """The event ids of a timeline page (entries, or the dicts of older builds)."""
    return [int(item["id"] if isinstance(item, dict) else item.id) for item in page.items]


def check(t: Tidings, url: str, data: tl.Data, seed: Seed | None,
          model: str, rng: random.Random, raw: Seed | None = None) -> None:
    """A few users' first two pages are the seed's naive join's (and the baselines' pages
    too)."""
    for user in rng.sample(range(1, data.users + 1), min(CHECKED_USERS, data.users)):
        first = t.timeline(tl.user_id(user), limit=20)
        want = tl.naive_page(url, user, None)
        if ids_of(first) != want:
            raise BenchFailure(f"{model}: the first page of user {user} is {ids_of(first)}, "
                               f"the seed's naive join gives {want}")
        if first.next_cursor is not None:
            later = t.timeline(tl.user_id(user), limit=20, cursor=first.next_cursor)
            want = tl.naive_page(url, user, ids_of(first)[-1])
            if ids_of(later) != want:
                raise BenchFailure(f"{model}: the second page of user {user} is "
                                   f"{ids_of(later)}, the seed's naive join gives {want}")
        for name, side in (("the seed's", seed), ("the raw limit's", raw)):
            if side is None:
                continue
            for kind, page in (("push", side.push_page), ("pull", side.pull_page)):
                for below in (None, *ids_of(first)[-1:]):
                    theirs = [int(str(r[0])) for r in page(user, below)]
                    if theirs != tl.naive_page(url, user, below):
                        raise BenchFailure(f"{name} {kind} page of user {user} below {below} "
                                           "differs from its naive join")


def _below(page: Callable[[int, int], object]) -> Callable[[tuple[int, str, int]], object]:
    """A baseline's later page of (user, cursor, last id) items: below the last id."""
    return lambda item: page(item[0], item[2])


def reads(t: Tidings, seed: Seed | None, model: str, users: list[int],
          phases: Phases, raw: Seed | None = None) -> None:
    """Time the first and later pages of ``users`` on tidings and on the seed (and the raw
    limit's pull pages, if given), the sides taking turns in blocks
    (:func:`~tidings_benchmarks.measure.alternating`)."""
    def first(u: int) -> object:
        return t.timeline(tl.user_id(u), limit=20)

    def later_page(item: tuple[int, str, int]) -> object:
        return t.timeline(tl.user_id(item[0]), limit=20, cursor=item[1])

    pages = [] if seed is None else [seed.pull_page if model == "pull" else seed.push_page]
    if raw is not None and model == "pull":
        pages.append(raw.pull_page)
    timed = alternating(users, [first, *pages])
    firsts = [(u, t.timeline(tl.user_id(u), limit=20)) for u in users]
    later = [(u, p.next_cursor, ids_of(p)[-1]) for u, p in firsts if p.next_cursor]
    timed_later = alternating(later, [later_page, *(_below(page) for page in pages)])
    phases.tidings["first page"].append(timed[0])
    phases.tidings["later page"].append(timed_later[0])
    for side, at in ((phases.baseline, 1), (phases.raw, 2)):
        if len(timed) > at:
            side["first page"].append(timed[at])
            side["later page"].append(timed_later[at])


def submits(t: Tidings, count: Callable[[], int], model: str,
            messages: list[tuple[int, str]], due: tuple[int, int], batch: int,
            baselines: Sequence[Seed], their_model: str | None = None,
            floors: Sequence[FloorPostgres] = ()) -> list[Timed]:
    """The same ``messages`` submitted by tidings and by each of ``baselines``, ``batch`` at
    a time, the sides taking turns block by block (their order rotating), as
    the pages do: tidings publishes a block (one unit) and runs the fan-out until the queue is
    empty, a baseline runs its statements for each message of it. Each side's rows are checked
    against ``due`` (tidings', the seed's); one :class:`Timed` per side, tidings' first.
    ``their_model``: the baselines' model, if not ``model``. ``floors`` (push on PostgreSQL)
    run tidings' own statements for each block, timed after the baselines, their rows checked
    against tidings' due."""
    written = [0] * len(baselines)
    pulled = (their_model or model) == "pull"

    def ours(block: list[tuple[int, str]]) -> None:
        t.publish_many([{"type": tl.POST.name, "actor": tl.user_id(sender),
                         "payload": tl.payload(body)} for sender, body in block])
        while t.run_jobs(max_jobs=1000) > 0:
            pass

    def theirs(side: int, block: list[tuple[int, str]]) -> None:
        seed = baselines[side]
        for sender, body in block:
            if pulled:
                seed.pull_submit(sender, body)
            else:
                written[side] += seed.push_submit(sender, body)

    def floor(side: FloorPostgres, block: list[tuple[int, str]]) -> None:
        side.push_block(block, now_us(), t.config.timeline_cap)

    sides: list[Callable[[list[tuple[int, str]]], None]] = [
        ours, *(partial(theirs, i) for i in range(len(baselines))),
        *(partial(floor, side) for side in floors)]
    blocks = [messages[start:start + batch] for start in range(0, len(messages), batch)]
    marks = [side.mark() for side in floors]
    seconds = [timed.seconds for timed in alternating(blocks, sides, block=1)]
    if count() != due[0]:
        raise BenchFailure(f"{model}: {count():,} mailbox rows written for {due[0]:,} due")
    for floor_side, mark in zip(floors, marks, strict=True):
        if (rows := floor_side.written(mark)) != due[0]:
            raise BenchFailure(f"the SQL floor's {model} submit wrote {rows:,} mailbox rows "
                               f"for {due[0]:,} due")
    for side, rows in enumerate(written):
        if rows != due[1]:
            raise BenchFailure(f"baseline {side + 1}'s {model} submit wrote {rows:,} mailbox "
                               f"rows for {due[1]:,} due")
    return [Timed(s, tuple(s / len(messages) for _ in messages)) for s in seconds]


def due_rows(data: tl.Data, model: str, messages: list[tuple[int, str]],
             celebrities: list[int]) -> tuple[int, int]:
    """(tidings' mailbox rows, the seed's) the messages must write in ``model``."""
    followers = data.followers()
    everyone = sum(followers.get(s, 0) for s, _ in messages)
    if model == "pull":
        return 0, 0
    skip = set(celebrities) if model == "hybrid" else set()
    return sum(followers.get(s, 0) for s, _ in messages if s not in skip), everyone


def one_model(store: BenchStore, data: tl.Data, model: str, settings: TimelineSettings,
              seed: timeline_seed.SeedTimelines | None, rng: random.Random,
              progress: Progress, raw: timeline_seed.RawPostgres | None = None,
              floors: Sequence[FloorPostgres] = ()) -> dict[str, Any] | None:
    celebrities = data.celebrities(settings.threshold()) if model == "hybrid" else []
    t = engine(store.url, model, settings)
    if t is None:
        return None
    try:
        started = time.perf_counter()
        task = progress.add_task(f"{data.graph}/{model}: mailboxes", total=data.users)
        rows = tl.prepare_model(store.url, data, model, t.config.timeline_cap,
                                settings.threshold(), partial(progress.advance, task))
        progress.remove_task(task)
        store.analyze()
        load_seconds = tl.elapsed(started)
        check(t, store.url, data, seed, model, rng, raw)
        sizes = table_bytes(store.url, store.tables)
        seed_sizes = table_bytes(store.url, timeline_seed.TABLES) if seed else None
        floors = floors if model == "push" else ()
        for side in floors:  # from the mailboxes just built
            side.fill()
        phases = Phases()
        task = progress.add_task(f"{data.graph}/{model}: rounds", total=settings.rounds)
        for _ in range(settings.rounds):
            users = [rng.randint(1, data.users) for _ in range(settings.ops)]
            reads(t, seed, model, users, phases, raw)
            messages = tl.new_messages(data, settings.submits, rng)
            # the raw limit's pull submit is the seed's own: not run twice
            baselines = [b for b in (seed, raw) if b is not None and not (
                b is raw and model == "pull")]
            before = tl.mailbox_states(store.url)
            timed = submits(t, partial(tl.count_new_mailbox_rows, store.url, data.messages),
                            model, messages, due_rows(data, model, messages, celebrities),
                            settings.submit_batch, baselines, floors=floors)
            targets = [phases.tidings, *(phases.baseline if b is seed else phases.raw
                                         for b in baselines),
                       *(phases.floor if f.capped else phases.floor_uncapped for f in floors)]
            for target, one in zip(targets, timed, strict=True):
                target["submit"].append(one)
            tl.remove_submitted(store.url, data.messages, before, celebrities)
            if baselines:
                timeline_seed.remove_submitted(store.url, data.messages)
            progress.advance(task)
        progress.remove_task(task)
    finally:
        t.close()
    return {"model": model, "graph": data.graph, "phases": phases, "mailbox_rows": rows,
            "celebrities": len(celebrities), "load_seconds": load_seconds, "storage": sizes,
            "seed_storage": seed_sizes}


def one_graph(store: BenchStore, graph: str, settings: TimelineSettings, rng: random.Random,
              progress: Progress, notes: list[str]) -> tuple[dict[str, Any], list[Any]]:
    task = progress.add_task(f"{graph}: generating the data", total=None)
    data = tl.generate(graph, settings.scale, settings.seed)
    progress.remove_task(task)
    seed: timeline_seed.SeedTimelines | None = None
    raw: timeline_seed.RawPostgres | None = None
    floors: list[FloorPostgres] = []
    try:
        store.empty_tables()
        started = time.perf_counter()
        task = progress.add_task(f"{graph}: loading {data.messages:,} messages",
                                 total=data.messages)
        tl.load_history(store.url, data, now_us(), partial(progress.advance, task))
        progress.remove_task(task)
        info: dict[str, Any] = {
            "graph": graph, "users": data.users, "messages": data.messages,
            "follows": len(data.edges),
            "followees_per_user": round(len(data.edges) / data.users, 2),
            "max_followers": max(data.followers().values()),
            "celebrity_followers": settings.threshold(),
            "celebrities": len(data.celebrities(settings.threshold())),
            "load_seconds": tl.elapsed(started)}
        if settings.baseline:
            timeline_seed.empty(store.url)
            task = progress.add_task(f"{graph}: the seed's tables", total=data.messages)
            info["seed_mailbox_rows"] = timeline_seed.load(store.url, data,
                                                           partial(progress.advance, task))
            progress.remove_task(task)
            seed = timeline_seed.SeedTimelines(store.url)
            if store.backend == "postgresql":
                raw = timeline_seed.RawPostgres(store.url)
                floors = [FloorPostgres(store.url), FloorPostgres(store.url, capped=False)]
        models = []
        with frozen_heap():  # the data set, kept for the whole graph, out of the GC's passes
            for model in settings.models:
                done = one_model(store, data, model, settings, seed, rng, progress,
                                 raw, floors)
                if done is None:
                    notes.append(f"{model}: not in this build of tidings (Config has no "
                                 "timeline_model); skipped")
                    continue
                models.append(done)
        return info, models
    finally:
        for side in (seed, raw, *floors):
            if side is not None:
                side.close()


def run(settings: TimelineSettings, progress: Progress) -> dict[str, Any]:
    rng = random.Random(settings.seed)
    notes: list[str] = []
    graphs: list[dict[str, Any]] = []
    measured: list[dict[str, Any]] = []
    with BenchStore(settings.store) as store:
        if settings.baseline:
            timeline_seed.create(store.url)
        for graph in settings.graphs:
            info, models = one_graph(store, graph, settings, rng, progress, notes)
            graphs.append(info)
            measured += models
        backend = store.backend
    out: dict[str, Any] = {
        **header("timelines", settings, backend),
        "notes": sorted(set(notes)),
        "data": graphs,
    }
    out.update(summarise(measured, timeline_seed.statements(backend), settings.baseline,
                         timeline_seed.raw_statements() if backend == "postgresql" else None))
    return out
