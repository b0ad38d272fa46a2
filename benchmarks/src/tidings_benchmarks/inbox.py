"""W2 — inbox reads (MediaWiki Echo, Jiepang): unread counts, bundled first pages, mark all read.

The data set: ``10,000 * scale`` users and ``1,000,000 * scale`` notifications (about 100 per
user) in Echo's mix, published through :meth:`Tidings.publish_many` and fanned out by the job
handlers, so bundles are formed exactly as in production:

==============  ======================  =============  ==========================================
notifications   type (``demo/wiki.toml``) bundled by     who is told
==============  ======================  =============  ==========================================
40 %            ``page-linked``         page           the page's watchers (4 users)
25 %            ``mention``             —              1 or 2 users
20 %            ``edit-user-talk``      page           the owner of the talk page
15 %            ``thank-you-edit``      actor          one user; thanks come from 50 regulars
==============  ======================  =============  ==========================================

Then the oldest 30 % of each user's notifications are marked read (with their bundles). Each
round times, one request after another from one client: ``unread_count``,
``notifications(limit=20)`` (the first page of the bundled inbox, titles rendered) and
``mark_all_read``, after which the read markers are put back. Reads are cold: each figure's
requests walk one shuffled order of every user (:class:`Cold`), from the warm-up through the
last round, so a user is read again only after every other one (at ``--scale 0.1``, 1,000
users' first pages are 20,000 items, past the engine's item and render caches of 4,096).

``--baseline`` times, in blocks alternating with tidings' and for the same users, the raw
statements of :mod:`tidings_benchmarks.inbox_raw` on tidings' tables and those of the lean
layout (:mod:`tidings_benchmarks.lean_raw`, filled with the same notifications in the same
groups); ``--sweep`` adds the reads of one user per inbox
size (:mod:`tidings_benchmarks.sweep`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.progress import Progress
from rich.table import Table
from sqlalchemy import delete, func, insert, select, true

from tidings.config import Config
from tidings.demo import wiki_types
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.services.listing import ITEM_CACHE_SIZE
from tidings_benchmarks import BenchFailure, inbox_storage, lean_raw
from tidings_benchmarks import sweep as sweep_workload
from tidings_benchmarks.compare import Side, comparison, comparison_table, sweep_table
from tidings_benchmarks.inbox_raw import RawInbox, baselines
from tidings_benchmarks.lean_raw import LeanInbox
from tidings_benchmarks.measure import Latencies, Timed, alternating, frozen_heap, median
from tidings_benchmarks.report import fmt_ms, fmt_rate, header
from tidings_benchmarks.sql import notifications
from tidings_benchmarks.stores import BenchStore, database_of

TYPES = ("page-linked", "mention", "edit-user-talk", "thank-you-edit")
LINK_WATCHERS = 4
THANKERS = 50
READ_SHARE = 0.30
PUBLISH_BATCH = 500
# Events per kind, weighted so the *notifications* come out 40/25/20/15 (links reach 4 users,
# mentions 1.5 on average).
EVENT_WEIGHTS = {"link": 40 / LINK_WATCHERS, "mention": 25 / 1.5, "talk": 20.0, "thanks": 15.0}
FIGURES = ("unread count", "first page (20, bundled)", "mark all read")


# Each goal is a ratio to the baseline in the same run (issue: "within reach of the raw
# database").
GOALS = {FIGURES[0]: 0.85, FIGURES[1]: 0.5, FIGURES[2]: 0.8}


@dataclass(frozen=True)
class InboxSettings:
    store: str | None
    scale: float = 0.01
    rounds: int = 3
    ops: int = 300
    seed: int = 1
    baseline: bool = False
    sweep: bool = False
    sizes: tuple[int, ...] = sweep_workload.SIZES


def sizes(scale: float) -> tuple[int, int]:
    """(users, notifications) at this scale: 10,000 and 1,000,000 at 1.0."""
    users = max(10, round(10_000 * scale))
    return users, max(users, round(1_000_000 * scale))


class World:
    """Users, pages and their watchers, and a stream of events in the W2 mix."""

    def __init__(self, users: int, rng: random.Random) -> None:
        self.rng = rng
        self.users = [f"user{i:06d}" for i in range(users)]
        self.pages = [f"page:Article_{i}" for i in range(max(10, users // 2))]
        self.watchers = {page: rng.sample(self.users, min(LINK_WATCHERS, users))
                         for page in self.pages}
        self.thankers = self.users[:THANKERS]

    def events(self) -> Iterator[Event]:
        rng = self.rng
        kinds = list(EVENT_WEIGHTS)
        weights = list(EVENT_WEIGHTS.values())
        while True:
            kind = rng.choices(kinds, weights)[0]
            actor = rng.choice(self.users)
            if kind == "link":
                page = rng.choice(self.pages)
                source = rng.choice(self.pages).split(":", 1)[1].replace("_", " ")
                yield Event("page-linked", actor=actor, object=page, payload={"from": source},
                            recipients=[u for u in self.watchers[page] if u != actor])
            elif kind == "mention":
                told = rng.sample(self.users, rng.choice((1, 2)))
                yield Event("mention", actor=actor, object=rng.choice(self.pages),
                            recipients=[u for u in told if u != actor])
            elif kind == "talk":
                owner = rng.choice(self.users)
                yield Event("edit-user-talk", actor=actor, object=f"page:User_talk:{owner}",
                            recipients=[owner] if owner != actor else [],
                            payload={"summary": "Re: your last edit"})
            else:
                thanker = rng.choice(self.thankers)
                thanked = rng.choice(self.users)
                yield Event("thank-you-edit", actor=thanker, object=rng.choice(self.pages),
                            recipients=[thanked] if thanked != thanker else [])


def bench_types() -> list[EventType]:
    return [t for t in wiki_types() if t.name in TYPES]


def load(t: Tidings, world: World, target: int, progress: Progress) -> dict[str, Any]:
    """Publish events until ``target`` notifications are due, deliver them, read 30 %."""
    started = time.perf_counter()
    task = progress.add_task("registering users", total=len(world.users))
    for user in world.users:
        t.add_user(user, read_up_to=0)
        progress.advance(task)
    progress.remove_task(task)

    task = progress.add_task(f"publishing ≈{target:,} notifications", total=target)
    due = 0
    events = 0
    stream = world.events()
    while due < target:
        batch: list[Event] = []
        while due < target and len(batch) < PUBLISH_BATCH:
            event = next(stream)
            if event.recipients:
                batch.append(event)
                due += len(event.recipients)
        t.publish_many(batch)
        events += len(batch)
        progress.update(task, completed=due)
    progress.remove_task(task)

    task = progress.add_task("delivering (fan-out jobs)", total=events)
    while (ran := t.run_jobs(max_jobs=200)) > 0:
        progress.advance(task, ran)
    progress.remove_task(task)

    task = progress.add_task("marking the oldest 30 % read", total=len(world.users))
    n = notifications.c
    for user in world.users:
        with database_of(t).read() as conn:
            owned = conn.execute(select(n.event_id, n.display_hash).where(n.user_id == user)
                                 .order_by(n.event_id)).all()
        oldest = _oldest_groups(owned, round(len(owned) * READ_SHARE))
        for start in range(0, len(oldest), 1000):
            t.mark_read(user, oldest[start:start + 1000])
        progress.advance(task)
    progress.remove_task(task)

    with database_of(t).read() as conn:
        rows = conn.execute(select(func.count()).select_from(notifications)).scalar_one()
        bases = conn.execute(select(func.count()).select_from(notifications)
                             .where(n.bundle_base == true())).scalar_one()
        read = conn.execute(select(func.count()).select_from(notifications)
                            .where(n.read_at.is_not(None))).scalar_one()
    if rows != due:
        raise BenchFailure(f"{rows:,} notifications delivered, {due:,} due")
    return {"users": len(world.users), "events": events, "notifications": rows,
            "bundles": bases, "read_share": round(read / rows, 3) if rows else 0.0,
            "load_seconds": round(time.perf_counter() - started, 2)}


def _oldest_groups(rows: Sequence[Any], share: int) -> list[int]:
    """The event ids of the display groups first published, until they hold ``share`` rows:
    marking a member reads its whole group, so the share is counted by groups (events
    published together share their time, so the inbox's order would take one member of
    nearly every group first)."""
    members: dict[str, list[int]] = {}
    for event_id, group in rows:
        members.setdefault(group, []).append(event_id)
    chosen: list[int] = []
    for ids in members.values():  # in the order of each group's first event
        if len(chosen) >= share:
            break
        chosen += ids
    return chosen


def save_markers(t: Tidings) -> list[dict[str, Any]]:
    read_markers = database_of(t).table("read_markers")
    with database_of(t).read() as conn:
        return [dict(r._mapping) for r in conn.execute(select(read_markers))]


def restore_markers(t: Tidings, rows: list[dict[str, Any]]) -> None:
    read_markers = database_of(t).table("read_markers")
    with database_of(t).write() as conn:
        conn.execute(delete(read_markers))
        for start in range(0, len(rows), 1000):
            conn.execute(insert(read_markers), rows[start:start + 1000])


def first_page(t: Tidings, user: str) -> None:
    page = t.notifications(user, limit=20)
    if page.items and not page.items[0].title:
        raise BenchFailure(f"an untitled notification in {user}'s inbox")


class Cold:
    """Users in one shuffled order of them all, taken in turn: a user comes again only after
    every other one."""

    def __init__(self, users: Sequence[str], rng: random.Random) -> None:
        self.order = list(users)
        rng.shuffle(self.order)
        self.at = 0
        self.taken = 0

    def take(self, n: int) -> list[str]:
        out = []
        for _ in range(n):
            out.append(self.order[self.at])
            self.at = (self.at + 1) % len(self.order)
        self.taken += n
        return out

    def repeats(self) -> int:
        """Requests so far to a user already read by this walk."""
        return max(0, self.taken - len(self.order))


def walks(users: Sequence[str], rng: random.Random) -> dict[str, Cold]:
    """Each figure's walk over every user, in an order of its own."""
    return {figure: Cold(users, rng) for figure in FIGURES}


def picks(cold: dict[str, Cold], ops: int) -> dict[str, list[str]]:
    """The users each figure's requests go to this round (every side gets the same): the
    next ``ops`` of each walk (mark all read: at most one request a user)."""
    return {FIGURES[0]: cold[FIGURES[0]].take(ops), FIGURES[1]: cold[FIGURES[1]].take(ops),
            FIGURES[2]: cold[FIGURES[2]].take(min(ops, len(cold[FIGURES[2]].order)))}


def coldness(cold: dict[str, Cold], users: int) -> dict[str, Any]:
    """How cold the reads were: users, requests and repeats per figure, and whether every
    user's first page fits the engine's item cache (then first pages measure the cache)."""
    pages = users * 20
    return {"users": users, "order": "each figure walks one shuffled order of every user",
            "requests": {f: c.taken for f, c in cold.items()},
            "repeats": {f: c.repeats() for f, c in cold.items()},
            "first_page_items": pages, "item_cache": ITEM_CACHE_SIZE,
            "pages_fit_cache": pages <= ITEM_CACHE_SIZE}


def cache_note(users: int) -> str | None:
    if users * 20 > ITEM_CACHE_SIZE:
        return None
    return (f"{users:,} users' first pages ({users * 20:,} items) fit the engine's item cache "
            f"of {ITEM_CACHE_SIZE:,}: first pages measure the cache (use --scale 0.1 or more)")


def now_us() -> int:
    return time.time_ns() // 1000


def one_round(t: Tidings, raw: RawInbox | None, chosen: dict[str, list[str]],
              progress: Progress, label: str, lean: LeanInbox | None = None
              ) -> dict[str, dict[str, Timed]]:
    """Time each figure on tidings and, with a baseline, on the raw statements and on the
    lean layout's, for the same users in alternating blocks (:func:`alternating`); after
    each side's block of mark all read, tidings' or the lean side's first user is checked and
    both sides' read markers are put back."""
    sides: dict[str, dict[str, Timed]] = {"tidings": {}, "baseline": {}, "lean": {}}
    task = progress.add_task(label, total=len(FIGURES))
    ours: dict[str, Callable[[str], object]] = {
        FIGURES[0]: t.unread_count, FIGURES[1]: partial(first_page, t),
        FIGURES[2]: t.mark_all_read}
    for figure in FIGURES:
        calls = [ours[figure]]
        if raw is not None:
            theirs: dict[str, Callable[[str], object]] = {
                FIGURES[0]: raw.unread_count, FIGURES[1]: raw.first_page,
                FIGURES[2]: partial(_mark, raw, now_us())}
            calls.append(theirs[figure])
        if lean is not None:
            leans: dict[str, Callable[[str], object]] = {
                FIGURES[0]: lean.unread_count, FIGURES[1]: lean.first_page,
                FIGURES[2]: partial(_mark_lean, lean, now_us())}
            calls.append(leans[figure])
        after: Callable[[int, list[str]], None] | None = None
        if figure == FIGURES[2]:
            saved = save_markers(t)
            saved_lean = lean.save_marks() if lean is not None else []

            def after(side: int, block: list[str], saved: list[dict[str, Any]] = saved,
                      saved_lean: list[tuple[Any, ...]] = saved_lean,
                      lean_side: int = len(calls) - 1) -> None:
                if side == 0:
                    check_all_read(t, block[0])
                restore_markers(t, saved)
                if lean is not None:
                    if side == lean_side and lean.unread_count(block[0]) != 0:
                        raise BenchFailure(f"{block[0]} has unread groups in the lean "
                                           "tables after mark all read")
                    lean.restore_marks(saved_lean)
        timed = alternating(chosen[figure], calls, after)
        sides["tidings"][figure] = timed[0]
        if raw is not None:
            sides["baseline"][figure] = timed[1]
        if lean is not None:
            sides["lean"][figure] = timed[-1]
        progress.advance(task)
    progress.remove_task(task)
    return sides


def _mark(raw: RawInbox, now: int, user: str) -> None:
    raw.mark_all_read(user, now)


def _mark_lean(lean: LeanInbox, now: int, user: str) -> None:
    lean.mark_all_read(user, now)


def check_lean(t: Tidings, lean: LeanInbox, users: Sequence[str]) -> None:
    """The lean tables answer what tidings answers: the same capped unread count and, on the
    first page, the same newest events in the same order with the same group sizes."""
    for user in users:
        ours, theirs = t.unread_count(user).count, lean.unread_count(user)
        if ours != theirs:
            raise BenchFailure(f"{user}: unread count {ours} in tidings, {theirs} in the "
                               "lean tables")
        page = [(int(i.id), i.count) for i in t.notifications(user, limit=20).items]
        lean_page = [(row["event_id"], row["count"]) for row in lean.first_page(user)]
        if page != lean_page:
            raise BenchFailure(f"{user}: first page {page} in tidings, {lean_page} in the "
                               "lean tables")


def check_all_read(t: Tidings, user: str) -> None:
    if t.unread_count(user).count != 0:
        raise BenchFailure(f"{user} has unread notifications after mark all read")


def open_loaded(store: BenchStore, scale: float, rng: random.Random,
                progress: Progress) -> tuple[Tidings, World, Any]:
    """An engine on the bench store with the W2 data set loaded and analysed (the caller
    closes the engine)."""
    users, target = sizes(scale)
    t = Tidings(Config(database_url=store.url), types=bench_types(), pool_size=2)
    for event_type in bench_types():
        t.define_type(event_type)
    world = World(users, rng)
    data = load(t, world, target, progress)
    store.analyze()
    return t, world, data


def run(settings: InboxSettings, progress: Progress) -> dict[str, Any]:
    rng = random.Random(settings.seed)
    notes: list[str] = []
    sweep: dict[str, Any] | None = None
    with BenchStore(settings.store) as store:
        t, world, data = open_loaded(store, settings.scale, rng, progress)
        raw = RawInbox(store.url) if settings.baseline else None
        lean: LeanInbox | None = None
        try:
            if settings.baseline:
                task = progress.add_task("filling the lean layout's tables", total=None)
                lean = LeanInbox(store.url, bench_types())
                progress.remove_task(task)
                check_lean(t, lean, world.users[:20])
            storage = inbox_storage.measure(store.url, data["notifications"],
                                            baseline=settings.baseline)
            if lean is not None:
                storage["lean"] = lean_raw.storage(store.url, data["notifications"])
            sweep_users: dict[int, str] = {}
            if settings.sweep:
                stream = (e for e in world.events() if e.recipients)
                sweep_users = sweep_workload.load(
                    t, store.url, settings.sizes, partial(next, stream), bench_types(),
                    READ_SHARE, progress)
                store.analyze()
            cold = walks(world.users, rng)
            with frozen_heap():  # the generated world, out of the GC's passes
                one_round(t, raw, picks(cold, min(100, settings.ops)), progress,
                          "warming up", lean)
                rounds = [one_round(t, raw, picks(cold, settings.ops), progress,
                                    f"round {r + 1} of {settings.rounds}", lean)
                          for r in range(settings.rounds)]
                if sweep_users:
                    sweep = sweep_workload.run(t, raw, sweep_users, FIGURES[:2], settings.ops,
                                               settings.rounds, first_page, progress)
        finally:
            if raw is not None:
                raw.close()
            if lean is not None:
                lean.close()
            t.close()
        backend = store.backend
    figures = []
    for name in FIGURES:
        phases = [r["tidings"][name] for r in rounds]
        latencies = Latencies(tuple(x for p in phases for x in p.latencies))
        figures.append({
            "figure": name,
            "per_second": round(median([p.per_second for p in phases]), 1),
            "per_second_rounds": [round(p.per_second, 1) for p in phases],
            "latency": latencies.to_dict(),
        })
    if (note := cache_note(len(world.users))) is not None:
        notes.append(note)
    out: dict[str, Any] = {
        **header("inbox", settings, backend),
        "notes": notes,
        "data": data,
        "reads": coldness(cold, len(world.users)),
        "results": figures,
        "storage": storage,
    }
    if settings.baseline:
        statements = baselines(backend)
        out["comparisons"] = [
            comparison(name, "requests/s", Side.of([r["tidings"][name] for r in rounds]),
                       Side.of([r["baseline"][name] for r in rounds]),
                       statement=statements[name].statement, anchor=statements[name].anchor,
                       goal=GOALS[name], lean=Side.of([r["lean"][name] for r in rounds]),
                       lean_statement=lean_raw.STATEMENTS[name])
            for name in FIGURES]
    if sweep is not None:
        out["sweep"] = sweep
    return out


def table(result: dict[str, Any]) -> list[Table]:
    data = result["data"]
    title = (f"W2 inbox — {result['store']}: {data['users']:,} users, "
             f"{data['notifications']:,} notifications in {data['bundles']:,} bundles, "
             f"{data['read_share']:.0%} read (median of {result['settings']['rounds']} rounds)")
    tables: list[Table] = []
    if "comparisons" in result:
        tables.append(comparison_table(title + "; baseline: the raw statements; lean raw: "
                                       "the lean layout's", result["comparisons"]))
    else:
        out = Table(title=title, title_justify="left")
        out.add_column("figure")
        for column in ("per second", "p50 ms", "p90 ms", "p99 ms", "requests"):
            out.add_column(column, justify="right")
        for row in result["results"]:
            lat = row["latency"]
            out.add_row(row["figure"], fmt_rate(row["per_second"]), fmt_ms(lat["p50_ms"]),
                        fmt_ms(lat["p90_ms"]), fmt_ms(lat["p99_ms"]), f"{lat['count']:,}")
        tables.append(out)
    if "storage" in result:
        tables.append(inbox_storage.table(result["storage"], f"W2 storage — {result['store']}"))
    if "sweep" in result:
        tables.append(sweep_table("W2 inbox reads by inbox size (one user each; should be "
                                  "flat)", result["sweep"]))
    return tables
