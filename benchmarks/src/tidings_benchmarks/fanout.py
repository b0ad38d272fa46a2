"""W3 — fan-out (LiveJournal ESN): one event to N followers, delivered by W worker processes;
then the seed's many small fan-outs (events to ~43 followers, :mod:`tidings_benchmarks.push`).

For each N the store is emptied, N follows of one actor are loaded in bulk (``COPY`` on
PostgreSQL, multi-row ``INSERT`` elsewhere) and each follower's inbox is filled with
``--prefill`` past events of that actor (:mod:`tidings_benchmarks.prefill`: on every side,
so fan-out writes into populated indexes). For each W, W ``tidings worker`` processes are
started and left to reach their polling loop; then, each round, one event is published and the
clock runs until every inbox row is written (read off the job queue:
:mod:`tidings_benchmarks.jobwait`). The round's notifications are then counted once, in the
server: N rows for N distinct users, each a follower, or the bench fails (nothing lost or
doubled). Each worker's RSS is sampled from before the first round's event to after the last
(:mod:`tidings_benchmarks.memory`): start, peak, end.

``--baseline`` also writes the same N rows with the raw statements of
:mod:`tidings_benchmarks.fanout_raw` (``INSERT … SELECT`` in the server, and ``COPY`` from the
client) and with those of the lean layout (:mod:`tidings_benchmarks.lean_raw`, its own tables,
the same followers), and the push rounds with the seed's push statement and the lean layout's:
at every worker count each round runs tidings and each raw side once, for the same event or
actors, the sides' order rotating round by round (:func:`~tidings_benchmarks.measure.turns`),
and each worker count is compared with the raw rounds run between its own. Every side's round
starts from the prefilled inboxes (:func:`~tidings_benchmarks.prefill.reset`). ``--sweep``
runs 1, 2 and 4 workers and adds each figure's curve over the number of workers.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from rich.progress import Progress
from rich.table import Table

from tidings.config import Config
from tidings.domain.events import Event
from tidings.engine import Tidings
from tidings_benchmarks import BenchFailure
from tidings_benchmarks import push as push_workload
from tidings_benchmarks.compare import Side, comparison, comparison_table, point, sweep_table
from tidings_benchmarks.fanout_raw import EVENT_TYPE, OBJECT, STATEMENTS, RawFanout, write_follows
from tidings_benchmarks.jobwait import delivered, wait_for_fanout, wait_for_queue
from tidings_benchmarks.lean_raw import STATEMENTS as LEAN_STATEMENTS
from tidings_benchmarks.lean_raw import LeanFanout
from tidings_benchmarks.measure import median, percentile, turns
from tidings_benchmarks.memory import RssSampler, fmt_pct, memory_table
from tidings_benchmarks.prefill import DEFAULT_PER_FOLLOWER, Prefilled, history, prefill, reset
from tidings_benchmarks.processes import WorkerProcesses
from tidings_benchmarks.report import fmt_rate, header
from tidings_benchmarks.stores import BenchStore, database_of

T = TypeVar("T")
ACTOR = "bench-star"
SWEEP_WORKERS = (1, 2, 4)
# Goals as ratios to the baseline in the same run (issue 14).
GOAL_INSERT_SELECT = 0.5
GOAL_PUSH = 1.0
# Seconds until one event is in every inbox (p99 over rounds), by followers (BENCH.md W3).
GOAL_SECONDS = {10_000: 1.0, 1_000_000: 20.0}
# A worker's RSS across a fan-out: flat within ±10 % (issue 14).
GOAL_RSS_FLAT_PCT = 10.0
RAW_SIDES = ("baseline", "lean")  # the push rounds' keys that are no worker count
RawSeconds = dict[int, dict[int, dict[str, list[float]]]]  # followers, workers, side


@dataclass(frozen=True)
class FanoutSettings:
    store: str | None
    subscribers: tuple[int, ...]
    workers: tuple[int, ...]
    scale: float = 1.0
    rounds: int = 3
    chunk_size: int = 5000
    poll: float = 0.01
    timeout: float = 600.0
    baseline: bool = False
    sweep: bool = False
    push_users: int = 10_000
    push_events: int = 500
    seed: int = 1
    prefill: int = DEFAULT_PER_FOLLOWER  # notifications each follower holds before the rounds


def chunk_jobs(subscribers: int, chunk_size: int) -> int:
    """How many ``fanout_chunk`` jobs replace the ``fanout`` job (0: it delivers itself)."""
    return math.ceil(subscribers / chunk_size) if subscribers > chunk_size else 0


def follower_id(i: int) -> str:
    return f"f{i:08d}"


def counted(items: Iterable[T], advance: Callable[[int], object], every: int = 10_000,
            ) -> Iterator[T]:
    """``items``, calling ``advance(n)`` every ``every`` items and for the rest at the end."""
    n = 0
    for n, item in enumerate(items, 1):
        yield item
        if n % every == 0:
            advance(every)
    advance(n % every)


def one_round(t: Tidings, settings: FanoutSettings, subscribers: int, procs: WorkerProcesses,
              progress: Progress, label: str, after: int = 0) -> float:
    """Publish one event and return the seconds until its last inbox row was committed
    (``after``: the newest event id before the round's)."""
    chunks = chunk_jobs(subscribers, settings.chunk_size)
    task = progress.add_task(label, total=subscribers)
    deadline = time.monotonic() + settings.timeout
    started = time.perf_counter()
    t.publish(Event(EVENT_TYPE.name, actor=ACTOR, object=OBJECT))

    def show(left: int) -> None:
        if chunks and left <= chunks:
            progress.update(task, completed=(chunks - left) * settings.chunk_size)

    seconds = wait_for_fanout(database_of(t), started, deadline, procs,
                              f"fan-out to {subscribers:,}", show)
    progress.update(task, completed=subscribers)
    left = delivered(database_of(t), ACTOR, after)
    if not left["rows"] == left["users"] == left["due"] == subscribers or left["strangers"]:
        raise BenchFailure(f"{left['rows']:,} inbox rows for {left['users']:,} distinct users "
                           f"({left['strangers']:,} not followers) written for "
                           f"{subscribers:,} followers: lost or doubled deliveries")
    wait_for_queue(database_of(t), deadline, procs)
    progress.remove_task(task)
    return seconds


def raw_job(job: Callable[[str, int], int], name: str, subscribers: int) -> float:
    """One raw side's fan-out of a new event of :data:`ACTOR`; its seconds."""
    started = time.perf_counter()
    written = job(ACTOR, time.time_ns() // 1000)
    seconds = time.perf_counter() - started
    if written != subscribers:
        raise BenchFailure(f"{name} wrote {written:,} rows for {subscribers:,}")
    return seconds


def run(settings: FanoutSettings, progress: Progress) -> dict[str, Any]:
    """Run every (subscribers, workers) pair for ``settings.rounds`` rounds, then the push
    rounds at each worker count; with a baseline, each round runs every raw side too."""
    results: list[dict[str, Any]] = []
    raw_seconds: RawSeconds = {}
    prefilled: list[dict[str, Any]] = []
    push: dict[str, Any] = {}
    rng = random.Random(settings.seed)
    with BenchStore(settings.store) as store:
        workers = SWEEP_WORKERS if settings.sweep else settings.workers
        notes: list[str] = []
        if store.backend == "sqlite" and workers != (1,):
            # One writer at a time: more processes would only queue on the lock.
            workers = (1,)
            notes.append("SQLite has one writer: ran with 1 worker process only")
        t = Tidings(Config(database_url=store.url, chunk_size=settings.chunk_size), pool_size=2)
        raw = RawFanout(store.url) if settings.baseline else None
        lean = LeanFanout(store.url, settings.chunk_size) if settings.baseline else None
        try:
            sides = 1 + 3 * (raw is not None)
            runs = len(settings.subscribers) * len(workers) * sides + (
                bool(settings.push_events) * len(workers) * (1 + 2 * (raw is not None)))
            overall = progress.add_task("fan-out runs (rounds)", total=runs * settings.rounds)
            for subscribers in settings.subscribers:
                store.empty_tables()
                t.define_type(EVENT_TYPE)  # before the workers start, so they read it
                loading = progress.add_task(f"loading {subscribers:,} follows",
                                            total=subscribers)
                write_follows(store.url, counted(((follower_id(i), ACTOR)
                                                  for i in range(subscribers)),
                                                 partial(progress.advance, loading)))
                progress.remove_task(loading)
                store.analyze()
                if lean is not None:
                    lean.forget()
                    lean.load_follows()
                done = _prefill(store, {ACTOR: subscribers}, settings, rng, lean, progress)
                prefilled.append({"subscribers": subscribers, **done.to_dict()})
                for count in workers:
                    seconds: list[float] = []
                    by_side = raw_seconds.setdefault(subscribers, {}).setdefault(count, {})
                    with _workers(store, settings, count) as procs, \
                            RssSampler(procs.pids) as rss:
                        for r in range(settings.rounds):
                            label = f"{subscribers:,} followers, {count} worker(s), round {r + 1}"
                            jobs: list[tuple[str, Callable[[], float]]] = [("tidings", partial(
                                one_round, t, settings, subscribers, procs, progress, label,
                                done.last_event))]
                            if raw is not None and lean is not None:
                                jobs += [(name, partial(raw_job, job, name, subscribers))
                                         for name, job in (("INSERT…SELECT", raw.insert_select),
                                                           ("COPY", raw.copy),
                                                           ("lean", lean.deliver_chunked))]
                            for i in turns(r, len(jobs)):
                                reset(store, done, lean)
                                name, job = jobs[i]
                                taken = job()
                                (seconds if i == 0 else by_side.setdefault(name, [])).append(
                                    taken)
                                progress.advance(overall)
                    results.append(_summary(subscribers, count, settings, seconds,
                                            rss.summaries()))
            if settings.push_events:
                push = _push(store, t, raw, lean, settings, workers, rng, progress)
                progress.advance(overall, settings.rounds * len(workers) * (
                    1 + 2 * (raw is not None)))
        finally:
            if raw is not None:
                raw.close()
            if lean is not None:
                lean.close()
            t.close()
        backend = store.backend
    out: dict[str, Any] = {
        **header("fanout", settings, backend, workers=list(workers)),
        "notes": notes,
        "prefill": prefilled,
        "results": results,
    }
    if push:
        out["push"] = push
    if settings.baseline:
        out["comparisons"] = _comparisons(results, raw_seconds, push)
    if settings.sweep:
        out["sweep"] = _sweep(results, raw_seconds, push)
    return out


def _prefill(store: BenchStore, followers: dict[str, int], settings: FanoutSettings,
             rng: random.Random, lean: LeanFanout | None, progress: Progress) -> Prefilled:
    task = progress.add_task(f"prefilling {settings.prefill} notifications a follower",
                             total=None)
    done = prefill(store, history(followers, settings.prefill, rng), settings.prefill, lean)
    progress.remove_task(task)
    return done


def _workers(store: BenchStore, settings: FanoutSettings, count: int) -> WorkerProcesses:
    return WorkerProcesses(store.url, count, chunk_size=settings.chunk_size, poll=settings.poll)


def _push(store: BenchStore, t: Tidings, raw: RawFanout | None, lean: LeanFanout | None,
          settings: FanoutSettings, workers: Sequence[int], rng: random.Random,
          progress: Progress) -> dict[str, Any]:
    """Events to ~43 followers, from prefilled inboxes: at each worker count, each round
    runs tidings, the seed's statement and the lean layout's for the same actors, the sides'
    order rotating round by round."""
    store.empty_tables()
    t.define_type(EVENT_TYPE)
    users = max(push_workload.FOLLOWEES + 1, round(settings.push_users * settings.scale))
    graph = push_workload.load_graph(store.url, users, rng, progress)
    store.analyze()
    if lean is not None:
        lean.forget()
        lean.load_follows()
    done = _prefill(store, graph.followers, settings, rng, lean, progress)
    actors = [rng.choices(graph.users, k=settings.push_events) for _ in range(settings.rounds)]
    seconds: dict[str, list[float]] = {}
    by_count: dict[str, dict[str, list[float]]] = {}
    task = progress.add_task(f"{settings.push_events:,} events to ~43 followers",
                             total=settings.rounds * len(workers) * (1 + 2 * (raw is not None)))
    for count in workers:
        with _workers(store, settings, count) as procs:
            for r, chosen in enumerate(actors):
                sides: list[tuple[str, Callable[[], float]]] = [(str(count), partial(
                    push_workload.tidings_round, t, graph, chosen, procs, settings.timeout))]
                if raw is not None and lean is not None:
                    sides += [("baseline", partial(push_workload.raw_round, raw, graph, chosen)),
                              ("lean", partial(push_workload.lean_round, lean, graph, chosen))]
                for i in turns(r, len(sides)):
                    reset(store, done, lean)
                    name, side = sides[i]
                    taken = side()
                    seconds.setdefault(name, []).append(taken)
                    if i:
                        by_count.setdefault(str(count), {}).setdefault(name, []).append(taken)
                    progress.advance(task)
    progress.remove_task(task)
    rows = [graph.due(chosen) for chosen in actors]
    out = {"users": users,
           "followers_per_user": round(sum(graph.followers.values()) / users, 1),
           "events": settings.push_events, "rows_per_round": rows, "prefill": done.to_dict(),
           "seconds": {k: [round(s, 4) for s in v] for k, v in seconds.items()},
           "events_per_second": {k: round(median([settings.push_events / s for s in v]), 1)
                                 for k, v in seconds.items()}}
    if by_count:
        out["raw_seconds_by_workers"] = {
            count: {k: [round(s, 4) for s in v] for k, v in sides_.items()}
            for count, sides_ in by_count.items()}
    return out


def _rates(count: int, seconds: Sequence[float]) -> list[float]:
    return [count / s for s in seconds if s > 0]


def _comparisons(results: list[dict[str, Any]], raw_seconds: RawSeconds,
                 push: dict[str, Any]) -> list[dict[str, Any]]:
    """Each worker count against the raw rounds run between its own rounds."""
    out: list[dict[str, Any]] = []
    for baseline, goal in (("INSERT…SELECT", GOAL_INSERT_SELECT), ("COPY", None)):
        statement, anchor = STATEMENTS[baseline]
        for row in results:
            n, w = row["subscribers"], row["workers"]
            out.append(comparison(
                f"deliveries, {n:,} followers, {w} worker(s) vs {baseline}", "rows/s",
                Side.of_rates(_rates(n, row["seconds"])),
                Side.of_rates(_rates(n, raw_seconds[n][w][baseline])),
                statement=statement, anchor=anchor, goal=goal, subscribers=n, workers=w,
                lean=Side.of_rates(_rates(n, raw_seconds[n][w]["lean"])),
                lean_statement=LEAN_STATEMENTS["fan-out"]))
    if push:
        statement, anchor = STATEMENTS["push"]
        for key, seconds in push["seconds"].items():
            if key not in RAW_SIDES:
                theirs = push["raw_seconds_by_workers"][key]
                baseline_rates = _rates(push["events"], theirs["baseline"])
                lean_rates = _rates(push["events"], theirs["lean"])
                out.append(comparison(
                    f"events to ~43 followers, {key} worker(s)", "events/s",
                    Side.of_rates(_rates(push["events"], seconds)),
                    Side.of_rates(baseline_rates), statement=statement, anchor=anchor,
                    goal=GOAL_PUSH, workers=int(key), lean=Side.of_rates(lean_rates),
                    lean_statement=LEAN_STATEMENTS["push"]))
    return out


def _sweep(results: list[dict[str, Any]], raw_seconds: RawSeconds,
           push: dict[str, Any]) -> dict[str, Any]:
    """Each figure's curve over the number of workers (baseline: one connection, its rounds
    run between those of each worker count)."""
    series: dict[str, list[dict[str, Any]]] = {}
    for row in results:
        n = row["subscribers"]
        raw = raw_seconds.get(n, {}).get(row["workers"], {}).get("INSERT…SELECT")
        series.setdefault(f"deliveries, {n:,} followers (rows/s)", []).append(point(
            row["workers"], row["deliveries_per_second"],
            median(_rates(n, raw)) if raw else None))
    if push:
        for key, seconds in push["seconds"].items():
            if key not in RAW_SIDES:
                raw = push.get("raw_seconds_by_workers", {}).get(key, {}).get("baseline")
                series.setdefault("events to ~43 followers (events/s)", []).append(point(
                    int(key), median(_rates(push["events"], seconds)),
                    median(_rates(push["events"], raw)) if raw else None))
    return {"x_label": "worker processes", "x_log": False, "unit": "per second",
            "series": series}


def _summary(subscribers: int, workers: int, settings: FanoutSettings,
             seconds: Sequence[float], rss: dict[str, dict[str, Any]]) -> dict[str, Any]:
    rates = [subscribers / s for s in seconds]
    chunks = chunk_jobs(subscribers, settings.chunk_size)
    p99 = percentile(seconds, 99)
    goal = GOAL_SECONDS.get(subscribers)
    return {
        "subscribers": subscribers,
        "workers": workers,
        "chunk_jobs": chunks,
        "rounds": len(seconds),
        "seconds": [round(s, 4) for s in seconds],
        "median_seconds": round(median(seconds), 4),
        "max_seconds": round(max(seconds), 4),
        "p99_seconds": round(p99, 4),
        "goal_seconds": goal,
        "goal_met": p99 <= goal if goal is not None else None,
        # every round's rows were checked: one per follower, no other (else the bench failed)
        "lost": 0, "doubled": 0,
        "deliveries_per_second": round(median(rates), 1),
        "memory": worker_memory(rss),
    }


def worker_memory(rss: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each worker's RSS from before the first round's event to after the last round: start,
    peak, end, and the largest of its drift (end) and peak growth against the start, which
    the ±10 % goal reads."""
    deviations = [max(abs(row["drift_pct"]), abs(row["peak_growth_pct"]))
                  for row in rss.values()
                  if row["drift_pct"] is not None and row["peak_growth_pct"] is not None]
    worst = max(deviations) if deviations and len(deviations) == len(rss) else None
    return {"processes": rss, "goal_pct": GOAL_RSS_FLAT_PCT, "max_deviation_pct": worst,
            "goal_met": worst <= GOAL_RSS_FLAT_PCT if worst is not None else None}


def table(result: dict[str, Any]) -> list[Table]:
    rounds = result["settings"]["rounds"]
    out = Table(title=f"W3 fan-out — {result['store']} (median of {rounds} rounds)",
                title_justify="left")
    for column in ("subscribers", "workers", "chunk jobs", "time to complete (s)",
                   "worst (s)", f"p99 of {rounds} (s)", "goal", "lost / doubled",
                   "deliveries/s", "worker RSS ±%"):
        out.add_column(column, justify="right")
    for row in result["results"]:
        goal = row.get("goal_seconds")
        mem = row["memory"]
        out.add_row(f"{row['subscribers']:,}", str(row["workers"]), str(row["chunk_jobs"]),
                    f"{row['median_seconds']:.3f}", f"{row['max_seconds']:.3f}",
                    f"{row['p99_seconds']:.3f}", f"≤ {goal:g} s" if goal is not None else "",
                    f"{row['lost']} / {row['doubled']}", fmt_rate(row["deliveries_per_second"]),
                    fmt_pct(mem["max_deviation_pct"]) + f" (goal ±{mem['goal_pct']:g} %)")
    tables = [out]
    for row in result["results"]:
        tables.append(memory_table(
            f"W3 worker memory — {row['subscribers']:,} followers, {row['workers']} worker(s): "
            f"RSS from before the first event to after round {row['rounds']}",
            row["memory"]["processes"], lambda _label: f"±{GOAL_RSS_FLAT_PCT:g} %"))
    if "push" in result:
        push = result["push"]
        small = Table(title=f"W3 events to ~{push['followers_per_user']:g} followers — "
                            f"{push['users']:,} users, {push['events']:,} events a round "
                            f"(median of {rounds} rounds)", title_justify="left")
        for column in ("workers", "time (s)", "events/s", "rows/s"):
            small.add_column(column, justify="right")
        for key, seconds in push["seconds"].items():
            rows = median(push["rows_per_round"])
            small.add_row(key, f"{median(seconds):.3f}",
                          fmt_rate(push["events_per_second"][key]),
                          fmt_rate(rows / median(seconds)))
        tables.append(small)
    if "comparisons" in result:
        tables.append(comparison_table(f"W3 — tidings | baseline | ratio ({result['store']})",
                                       result["comparisons"]))
    if "sweep" in result:
        tables.append(sweep_table("W3 by worker processes", result["sweep"]))
    return tables

