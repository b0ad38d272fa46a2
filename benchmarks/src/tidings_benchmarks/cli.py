"""``tidings bench …``: run a workload, print Rich tables, write JSON (``--json FILE``) and a
chart (``--plot FILE.png``).

Progress goes to stderr and disappears when done; the tables go to stdout. ``--baseline`` runs,
in the same command and on the same data, the minimal raw statements that do each job, and the
tables print ``tidings | baseline | ratio``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tidings.config import Config
from tidings_benchmarks import HELP as BENCH_HELP
from tidings_benchmarks import BenchFailure
from tidings_benchmarks import fanout as fanout_workload
from tidings_benchmarks import http as http_workload
from tidings_benchmarks import inbox as inbox_workload
from tidings_benchmarks import plot as bench_plot
from tidings_benchmarks import prefill as prefill_workload
from tidings_benchmarks import sweep as sweep_workload
from tidings_benchmarks import timelines as timelines_workload
from tidings_benchmarks.compare import Side, comparison
from tidings_benchmarks.report import environment, write_json
from tidings_benchmarks.timeline_data import GRAPHS
from tidings_benchmarks.timeline_report import tables as timeline_tables

bench_app = typer.Typer(
    help=BENCH_HELP,
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    rich_markup_mode=None)
console = Console()
if not console.is_terminal:  # a file or a pipe: keep each table row on one line
    console = Console(width=200)
err = Console(stderr=True)
S = TypeVar("S")
# What each figure of the Redis hot-store bench (tidings_benchmarks.hot) runs as its baseline.
HOT_BASELINES = {
    "fan-out rows/s": ("rows/s", "server-side Lua fan-out: ZADD + trim per follower, 43 "
                                 "followers a message, one message a round trip"),
    "page of 20 /s": ("pages/s", "ZREVRANGEBYSCORE id page below a score cursor"),
    "page of 20, vs ids + bodies /s": ("pages/s", "ZREVRANGE of 20 ids, then HGETALL of "
                                                  "each message in one pipeline (2 RTT)"),
    "unread count /s": ("counts/s", "ZCOUNT of the unread index"),
}
# within 80 % of raw_redis.py's Lua fan-out and id page (issue 11, BENCH.md "Redis")
HOT_GOALS = {"fan-out rows/s": 0.8, "page of 20 /s": 0.8}

REDIS_SCHEMES = ("redis://", "rediss://", "redis+cluster://", "rediss+cluster://")
StoreOption = Annotated[str | None, typer.Option(
    "--store", metavar="URL", show_default="a temporary SQLite file",
    help="Server or SQLite URL; the bench creates its own database there and drops it after, "
         "never touching others.")]
JsonOption = Annotated[Path | None, typer.Option(
    "--json", metavar="FILE", dir_okay=False, help="Also write the results to this JSON file.")]
RoundsOption = Annotated[int, typer.Option(
    min=1, metavar="N", help="Rounds; figures are their median.")]
BaselineOption = Annotated[bool, typer.Option(
    "--baseline", help="Also run the minimal raw statements that do the same jobs, in the same "
                       "run on the same data, and print tidings | baseline | ratio.")]
PlotOption = Annotated[Path | None, typer.Option(
    "--plot", metavar="FILE.png", dir_okay=False,
    help="Also draw the ratios (and --sweep's curves) to this PNG; needs matplotlib: "
         "pip install -e './benchmarks[plot]'.")]


def _counts(text: str, option: str, scale: float = 1.0) -> tuple[int, ...]:
    """'10000,100000' -> (10000, 100000), each times ``scale`` (at least 1)."""
    try:
        values = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter(f"expected whole numbers separated by commas, got {text!r}",
                                 param_hint=option) from None
    if not values or any(v < 1 for v in values):
        raise typer.BadParameter("give one or more positive numbers", param_hint=option)
    return tuple(max(1, round(v * scale)) for v in values)


def _run(work: Callable[[S, Progress], dict[str, Any]], settings: S,
         tables: Callable[[dict[str, Any]], list[Table]], json_file: Path | None,
         plot_file: Path | None = None) -> None:
    if plot_file is not None:
        try:
            bench_plot.require()  # before the run, not after minutes of it
        except bench_plot.PlotUnavailable as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(2) from None
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=True)
    try:
        with progress:
            result = work(settings, progress)
    except BenchFailure as exc:
        err.print(f"[red]bench failed:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    for table in tables(result):
        console.print(table)
    for note in result.get("notes", []):
        err.print(f"note: {note}")
    if json_file is not None:
        write_json(json_file, result)
        err.print(f"wrote {json_file}")
    if plot_file is not None:
        bench_plot.draw(result, plot_file)
        err.print(f"wrote {plot_file}")


@bench_app.command()
def fanout(
    store: StoreOption = None,
    subscribers: Annotated[str, typer.Option(
        metavar="N", help="Followers of the one event's actor, comma-separated (times --scale).")]
        = "10000,100000",
    workers: Annotated[str, typer.Option(
        metavar="N", help="Worker processes, comma-separated (SQLite: 1 only).")] = "1,2,4",
    rounds: RoundsOption = 3,
    scale: Annotated[float, typer.Option(
        metavar="X", min=0.0001, help="Multiplies --subscribers.")] = 1.0,
    chunk_size: Annotated[int | None, typer.Option(
        metavar="N", min=1, show_default="TIDINGS_CHUNK_SIZE or 5000",
        help="Fan-out chunk size.")] = None,
    poll: Annotated[float, typer.Option(
        metavar="SECONDS", min=0.001, help="The workers' idle poll interval, seconds.")] = 0.01,
    push_users: Annotated[int, typer.Option(
        metavar="N", min=2, help="Users of the push graph (times --scale), each following 43 "
                                 "others.")] = 10_000,
    push_events: Annotated[int, typer.Option(
        metavar="N", min=0, help="Events to ~43 followers per push round (0: no push "
                                 "rounds).")] = 500,
    seed: Annotated[int, typer.Option(
        metavar="N", help="Random seed for the push graph and its actors.")] = 1,
    prefill: Annotated[int, typer.Option(
        metavar="K", min=0, help="Notifications each follower already holds, on every side, "
                                 "before the timed rounds (0: empty inboxes).")]
        = prefill_workload.DEFAULT_PER_FOLLOWER,
    baseline: BaselineOption = False,
    sweep: Annotated[bool, typer.Option(
        "--sweep", help="Run 1, 2 and 4 workers (whatever --workers says) and report each "
                        "figure's curve over them.")] = False,
    json_file: JsonOption = None,
    plot_file: PlotOption = None,
) -> None:
    """W3, fan-out: one event to N followers (deliveries/s, time until every inbox row is
    written), then many events to ~43 followers each (events/s)."""
    settings = fanout_workload.FanoutSettings(
        store=store, subscribers=_counts(subscribers, "--subscribers", scale),
        workers=_counts(workers, "--workers"), scale=scale, rounds=rounds,
        chunk_size=chunk_size or Config.from_env().chunk_size, poll=poll, baseline=baseline,
        sweep=sweep, push_users=push_users, push_events=push_events, seed=seed,
        prefill=prefill)
    _run(fanout_workload.run, settings, fanout_workload.table, json_file, plot_file)


@bench_app.command()
def inbox(
    store: StoreOption = None,
    scale: Annotated[float, typer.Option(
        metavar="X", min=0.0001, help="1.0 = 10,000 users and 1,000,000 notifications.")] = 0.01,
    rounds: RoundsOption = 3,
    ops: Annotated[int, typer.Option(
        metavar="N", min=1, help="Requests per figure per round.")] = 300,
    seed: Annotated[int, typer.Option(
        metavar="N", help="Random seed for the data and the requests.")] = 1,
    baseline: BaselineOption = False,
    sweep: Annotated[bool, typer.Option(
        "--sweep", help="Also time the reads of one user whose inbox holds each of --sizes "
                        "rows (they should stay flat).")] = False,
    sizes: Annotated[str, typer.Option(
        metavar="N", help="Inbox sizes for --sweep, comma-separated.")]
        = ",".join(str(s) for s in sweep_workload.SIZES),
    json_file: JsonOption = None,
    plot_file: PlotOption = None,
) -> None:
    """W2, inbox reads in-process: unread count, first page of the bundled inbox and mark
    all read, per second. With a ``redis://`` or ``redis+cluster://`` store: fan-out, pages
    and counts on the Redis hot store beside the raw Redis baseline (always run) and the
    floor of the seed's layout, in the same run."""
    if store is not None and store.startswith(REDIS_SCHEMES):
        _run(_hot, (store, scale, rounds, ops, seed), _hot_table, json_file, plot_file)
        return
    settings = inbox_workload.InboxSettings(
        store=store, scale=scale, rounds=rounds, ops=ops, seed=seed, baseline=baseline,
        sweep=sweep, sizes=tuple(dict.fromkeys(_counts(sizes, "--sizes"))))
    _run(inbox_workload.run, settings, inbox_workload.table, json_file, plot_file)


def _hot(settings: tuple[str, float, int, int, int], progress: Progress) -> dict[str, Any]:
    import tempfile

    from tidings_benchmarks import hot

    url, scale, rounds, ops, seed = settings
    with tempfile.TemporaryDirectory(prefix="tidings-bench-") as folder:
        data = hot.run(url, scale, rounds, ops, seed, folder, progress)
    # the same "comparisons" as the SQL workloads write, so --json readers and --plot need
    # no second format
    comparisons = [
        comparison(name, unit, Side(row["tidings"], ()), Side(row["baseline"], ()),
                   statement=statement, anchor="bench-anchors/raw_redis.py",
                   goal=HOT_GOALS.get(name))
        for name, row in data["figures"].items()
        for unit, statement in [HOT_BASELINES.get(name, ("per second", ""))]]
    return {"workload": "inbox-hot", "store": url.split("?")[0], "backend": "redis",
            "rounds": rounds, "environment": environment(), "data": data,
            "comparisons": comparisons}


def _hot_table(result: dict[str, Any]) -> list[Table]:
    from tidings_benchmarks import hot, hot_floor

    tables: list[Table] = [hot.table(result)]
    if result["data"].get("floors"):
        tables.append(hot_floor.table(result))
    return tables


@bench_app.command()
def http(
    store: StoreOption = None,
    scale: Annotated[float, typer.Option(
        metavar="X", min=0.0001,
        help="The W2 data set: 1.0 = 10,000 users and 1,000,000 notifications.")] = 0.01,
    seconds: Annotated[float, typer.Option(
        metavar="SECONDS", min=0.1, max=600,
        help="Seconds each figure is timed, per round.")] = 3.0,
    rounds: RoundsOption = 3,
    concurrency: Annotated[int, typer.Option(
        metavar="N", min=1, max=1024, help="Connections the load generator keeps busy.")] = 8,
    processes: Annotated[int, typer.Option(
        metavar="N", min=1, max=64, help="Server processes (`tidings serve --workers`).")] = 2,
    seed: Annotated[int, typer.Option(
        metavar="N", help="Random seed for the data and the requests.")] = 1,
    baseline: BaselineOption = False,
    json_file: JsonOption = None,
    plot_file: PlotOption = None,
) -> None:
    """W4, HTTP: unread counts, first pages and publishing per second through `tidings serve` on
    loopback (a separate worker process fans out)."""
    settings = http_workload.HttpSettings(store=store, scale=scale, seconds=seconds,
                                          rounds=rounds, concurrency=concurrency,
                                          processes=processes, seed=seed, baseline=baseline)
    _run(http_workload.run, settings, http_workload.table, json_file, plot_file)


def _choices(text: str, allowed: tuple[str, ...], option: str) -> tuple[str, ...]:
    """'push,pull' -> ('push', 'pull'), each one of ``allowed``."""
    values = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    bad = [v for v in values if v not in allowed]
    if not values or bad:
        raise typer.BadParameter(f"choose from {', '.join(allowed)}", param_hint=option)
    return values


@bench_app.command()
def timelines(
    store: StoreOption = None,
    scale: Annotated[float, typer.Option(
        metavar="X", min=0.0001,
        help="1.0 = the seed's 10,000 users and 1,000,000 messages (42.9 followees a user at "
             "any scale).")] = 0.01,
    graphs: Annotated[str, typer.Option(
        metavar="NAMES", help="Follow graphs, comma-separated: uniform (the seed's), skewed "
                              "(power law, the same mean).")] = "uniform,skewed",
    models: Annotated[str, typer.Option(
        metavar="NAMES", help="Timeline models, comma-separated.")] = "push,pull,hybrid",
    rounds: RoundsOption = 3,
    ops: Annotated[int, typer.Option(
        metavar="N", min=1, help="Page requests per figure per round.")] = 300,
    submits: Annotated[int, typer.Option(
        metavar="N", min=1, help="New messages submitted per round.")] = 500,
    submit_batch: Annotated[int, typer.Option(
        metavar="N", min=1,
        help="Messages per publish_many (one transaction) in the submit figure; 1 publishes "
             "each on its own.")] = 100,
    celebrity_followers: Annotated[int | None, typer.Option(
        metavar="N", min=1, show_default="5000 times --scale",
        help="Hybrid: posts of users with more followers are merged at read time.")] = None,
    seed: Annotated[int, typer.Option(
        metavar="N", help="Random seed for the data and the requests.")] = 1,
    baseline: BaselineOption = False,
    json_file: JsonOption = None,
    plot_file: PlotOption = None,
) -> None:
    """W1, timelines (the seed's benchmark): messages submitted per second (fan-out durable),
    first and later timeline pages per second, and storage, for each model and graph; with
    --baseline the seed's own SQL beside them, on the same database and data (on PostgreSQL
    also the raw limit, and push submit's SQL floor: tidings' own statements alone)."""
    settings = timelines_workload.TimelineSettings(
        store=store, scale=scale, graphs=_choices(graphs, GRAPHS, "--graphs"),
        models=_choices(models, timelines_workload.MODELS, "--models"), rounds=rounds,
        ops=ops, submits=submits, seed=seed, baseline=baseline,
        celebrity_followers=celebrity_followers, submit_batch=submit_batch)
    if store is not None and store.startswith(REDIS_SCHEMES):
        _run(_hot_timelines, settings, timeline_tables, json_file, plot_file)
        return
    _run(timelines_workload.run, settings, timeline_tables, json_file, plot_file)


def _hot_timelines(settings: timelines_workload.TimelineSettings, progress: Progress
                   ) -> dict[str, Any]:
    from tidings_benchmarks import timeline_hot

    assert settings.store is not None
    return timeline_hot.run(settings, settings.store, progress)
