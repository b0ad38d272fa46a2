"""W1 — timelines (the seed ``../seeds/002_…``): push, pull and hybrid through the engine, beside
the seed's own SQL run on the same database and the same data.

For each graph (``uniform``, ``skewed``; :mod:`tidings.bench.timeline_data`) the history is
bulk-loaded once; then for each model the mailboxes it would have written are rebuilt in bulk
(push: every follower's newest ``timeline_cap``; hybrid: the same without the posts of users
with more than ``--celebrity-followers`` followers; pull: none), the planner's statistics
refreshed, five users' first and second pages checked against the seed's naive join, and each
round times, one request after another from one client:

* **first page** — ``Tidings.timeline(user, limit=20)`` of random users;
* **later page** — the page after it (the first page's cursor, fetched untimed before);
* **submit** — ``--submits`` new messages, ``publish_many``-ed ``--submit-batch`` at a time
  (each batch durable on return, one transaction), then the fan-out jobs run in the bench's
  process until the queue is empty (``run_jobs``: fan-out jobs of one claim in one unit): the
  clock stops when the last mailbox row is committed. The rows are then counted against the
  followers due.

With ``--baseline`` the seed's statements (:mod:`tidings.bench.timeline_seed`) run right after
each of tidings' phases, for the same users and the same messages (hybrid is compared with the
seed's push). Storage is measured once per model, before the submit rounds.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from functools import partial
from typing import Any, Protocol

from rich.progress import Progress

from tidings.bench import BenchFailure, timeline_seed
from tidings.bench import timeline_data as tl
from tidings.bench.measure import Timed, alternating, time_each
from tidings.bench.report import environment
from tidings.bench.storage import table_bytes
from tidings.bench.stores import BenchStore, redacted
from tidings.bench.timeline_report import summarise
from tidings.config import Config
from tidings.engine import Tidings
from tidings.store.sql.database import Database
from tidings.store.sql.schema import metadata

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
    submits: int = 200
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


def ids_of(page: Any) -> list[int]:
    """The event ids of a timeline page (entries, or the dicts of older builds)."""
    return [int(item["id"] if isinstance(item, dict) else item.id) for item in page.items]


def check(t: Tidings, url: str, data: tl.Data, seed: Seed | None,
          model: str, rng: random.Random) -> None:
    """A few users' first two pages are the seed's naive join's (and the seed's own)."""
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
        if seed is not None:
            theirs = [int(str(r[0])) for r in seed.push_page(user)]
            if theirs != tl.naive_page(url, user, None):
                raise BenchFailure(f"the seed's push page of user {user} differs from its "
                                   "naive join")


def reads(t: Tidings, seed: Seed | None, model: str, users: list[int],
          phases: Phases) -> None:
    """Time the first and later pages of ``users`` on tidings and on the seed, the two
    taking turns in blocks (:func:`~tidings.bench.measure.alternating`)."""
    def first(u: int) -> object:
        return t.timeline(tl.user_id(u), limit=20)

    def later_page(item: tuple[int, str, int]) -> object:
        return t.timeline(tl.user_id(item[0]), limit=20, cursor=item[1])

    page = None if seed is None else (seed.pull_page if model == "pull" else seed.push_page)
    timed = alternating(users, [first] if page is None else [first, page])
    firsts = [(u, t.timeline(tl.user_id(u), limit=20)) for u in users]
    later = [(u, p.next_cursor, ids_of(p)[-1]) for u, p in firsts if p.next_cursor]
    timed_later = alternating(later, [later_page] if page is None else [
        later_page, lambda item: page(item[0], item[2])])
    phases.tidings["first page"].append(timed[0])
    phases.tidings["later page"].append(timed_later[0])
    if page is not None:
        phases.baseline["first page"].append(timed[1])
        phases.baseline["later page"].append(timed_later[1])


def submit(t: Tidings, count: Callable[[], int], model: str, messages: list[tuple[int, str]],
           due: int, batch: int = 1) -> Timed:
    """Publish ``messages``, ``batch`` at a time (one unit each), and run the fan-out until the
    queue is empty; check the rows."""
    started = time.perf_counter()
    for start in range(0, len(messages), batch):
        t.publish_many([{"type": tl.POST.name, "actor": tl.user_id(sender),
                         "payload": tl.payload(body)}
                        for sender, body in messages[start:start + batch]])
    while t.run_jobs(max_jobs=1000) > 0:
        pass
    seconds = time.perf_counter() - started
    written = count()
    if written != due:
        raise BenchFailure(f"{model}: {written:,} mailbox rows written for {due:,} due")
    return Timed(seconds, tuple(seconds / len(messages) for _ in messages))


def seed_submit(seed: Seed, model: str, messages: list[tuple[int, str]], due: int) -> Timed:
    """The seed's submit statements for the same messages; check the mailbox rows."""
    written: list[int] = []
    write: Callable[[int, str], object] = (
        seed.pull_submit if model == "pull"
        else lambda s, b: written.append(seed.push_submit(s, b)))
    timed = time_each([partial(write, s, b) for s, b in messages])
    if sum(written) != due:
        raise BenchFailure(f"the seed's {model} submit wrote {sum(written):,} mailbox rows "
                           f"for {due:,} due")
    return timed


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
              seed: timeline_seed.SeedTimelines | None, db: Database, rng: random.Random,
              progress: Progress) -> dict[str, Any] | None:
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
        store.analyze(db)
        load_seconds = tl.elapsed(started)
        check(t, store.url, data, seed, model, rng)
        sizes = table_bytes(store.url, [tb.name for tb in metadata.sorted_tables])
        seed_sizes = table_bytes(store.url, timeline_seed.TABLES) if seed else None
        phases = Phases()
        task = progress.add_task(f"{data.graph}/{model}: rounds", total=settings.rounds)
        for _ in range(settings.rounds):
            users = [rng.randint(1, data.users) for _ in range(settings.ops)]
            reads(t, seed, model, users, phases)
            messages = tl.new_messages(data, settings.submits, rng)
            due, seed_due = due_rows(data, model, messages, celebrities)
            phases.tidings["submit"].append(submit(
                t, partial(tl.count_new_mailbox_rows, store.url, data.messages), model, messages,
                due, settings.submit_batch))
            tl.remove_submitted(store.url, data.messages)
            if seed is not None:
                phases.baseline["submit"].append(
                    seed_submit(seed, model, messages, seed_due))
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
    db = Database(store.url, pool_size=0)
    seed: timeline_seed.SeedTimelines | None = None
    try:
        store.empty_tables(db, keep=("alembic_version",))
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
        models = []
        for model in settings.models:
            done = one_model(store, data, model, settings, seed, db, rng, progress)
            if done is None:
                notes.append(f"{model}: not in this build of tidings (Config has no "
                             "timeline_model); skipped")
                continue
            models.append(done)
        return info, models
    finally:
        if seed is not None:
            seed.close()
        db.dispose()


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
        "workload": "timelines",
        "store": redacted(settings.store) if settings.store else "sqlite (temporary file)",
        "backend": backend,
        "settings": {k: v for k, v in asdict(settings).items() if k != "store"},
        "environment": environment(),
        "notes": sorted(set(notes)),
        "data": graphs,
    }
    out.update(summarise(measured, timeline_seed.statements(backend), settings.baseline))
    return out
