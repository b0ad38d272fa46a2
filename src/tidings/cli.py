"""The ``tidings`` command: migrate, worker, demo, import, jobs, types, bench."""

from __future__ import annotations

import logging
import signal
import sys
import traceback
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tidings.cli_bench import LazyBench, bench_help
from tidings.cli_errors import CommandError, check_port, explain
from tidings.config import Config

app = typer.Typer(help="tidings: a notification and activity-feed engine.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    rich_markup_mode=None)
console = Console()
err = Console(stderr=True)
WORKER_HEALTHCHECK_SECONDS = 60

DatabaseOption = Annotated[str | None, typer.Option(
    "--database-url", metavar="URL", envvar="TIDINGS_DATABASE_URL",
    help="Store URL: sqlite:///path, postgresql://…, mysql+pymysql://… "
         "[default: sqlite:///./tidings.db]")]


def _show_version(value: bool) -> None:
    if value:
        from tidings import __version__

        console.print(f"tidings {__version__}")
        raise typer.Exit()


_debug = {"on": False}  # `tidings --debug …`: errors a person caused show their traceback too


@app.callback()
def _options(version: Annotated[bool, typer.Option(
        "--version", callback=_show_version, is_eager=True,
        help="Show the version and exit.")] = False,
        debug: Annotated[bool, typer.Option(
            "--debug", help="On an error, show its traceback, not only its one line.")
        ] = False) -> None:
    """tidings: a notification and activity-feed engine."""
    _debug["on"] = debug


WebhookConcurrencyOption = Annotated[int | None, typer.Option(
    metavar="N", min=0,
    help="Threads for webhook deliveries alone, so slow receivers never hold up fan-out "
         "(0: leave webhooks to another worker) [default: TIDINGS_WEBHOOK_CONCURRENCY or 4]")]


def _config(database_url: str | None) -> Config:
    config = Config.from_env()
    if database_url:
        config = Config.from_env(database_url=database_url)
    return config


def _open(database_url: str | None, *, migrate: bool = False) -> object:
    from tidings.engine import Tidings

    tidings = Tidings(_config(database_url))
    if migrate:
        tidings.migrate()
    else:
        tidings.check_schema()
    tidings.load_types()
    return tidings


@app.command()
def migrate(database_url: DatabaseOption = None) -> None:
    """Create or upgrade the database schema to this version."""
    from tidings.wiring import migrate_schema

    before, after = migrate_schema(_config(database_url).database_url)
    console.print(f"schema at {after}" + (" (unchanged)" if before == after else
                                          f" (was {before or 'empty'})"))


@app.command()
def serve(
    database_url: DatabaseOption = None,
    host: Annotated[str, typer.Option(metavar="HOST", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(
        metavar="PORT", min=1, max=65535, help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(metavar="N", min=1, help="Server processes.")] = 1,
    no_worker: Annotated[bool, typer.Option(
        "--no-worker", help="Do not run jobs in the server (run `tidings worker` instead).")
    ] = False,
    concurrency: Annotated[int, typer.Option(
        metavar="N", min=1, help="Job threads per server process."
                                             )] = 1,
    webhook_concurrency: WebhookConcurrencyOption = None,
    json_logs: Annotated[bool, typer.Option("--json-logs", help="Log as JSON lines.")] = False,
) -> None:
    """Serve the HTTP API (and, unless --no-worker, run the job worker in-process)."""
    import os

    import uvicorn

    from tidings.engine import Tidings
    from tidings.wiring import migrate_if_embedded

    config = _config(database_url)
    if not config.api_keys:
        raise CommandError("TIDINGS_API_KEY is not set: the server needs at least one key "
                           "(comma-separated for several)")
    check_port(host, port)
    migrate_if_embedded(config.database_url)
    # reachable and at this schema, else one line here rather than a traceback per process
    opened = _open(database_url)
    assert isinstance(opened, Tidings)
    opened.close()
    os.environ["TIDINGS_DATABASE_URL"] = config.database_url
    os.environ["TIDINGS_SERVE_WORKER"] = "0" if no_worker else "1"
    os.environ["TIDINGS_SERVE_WORKER_CONCURRENCY"] = str(concurrency)
    if webhook_concurrency is not None:  # read by the engine of each server process
        os.environ["TIDINGS_WEBHOOK_CONCURRENCY"] = str(webhook_concurrency)
    _logging(json_logs)
    from tidings.exporter import shared_metrics_dir

    owned = shared_metrics_dir(workers)
    try:
        uvicorn.run("tidings.api.app:app_from_env", factory=True, host=host, port=port,
                    workers=workers, log_config=None, proxy_headers=False, access_log=False,
                    # h11 bounds a request's head as it reads it; the app checks it under any
                    # parser (tidings.api.middleware.HeaderLimit)
                    h11_max_incomplete_event_size=config.max_header_bytes,
                    # each of --workers N must answer the supervisor's pings within this:
                    # uvicorn's 5 s kill and restart processes still starting on a busy host
                    timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS)
    finally:
        if owned is not None:
            import shutil

            shutil.rmtree(owned, ignore_errors=True)


@app.command()
def worker(
    database_url: DatabaseOption = None,
    concurrency: Annotated[int, typer.Option(
        metavar="N", min=1, help="Jobs run at once (threads).")] = 1,
    poll: Annotated[float, typer.Option(
        metavar="SECONDS", help="Seconds to wait when the queue is empty.")] = 0.2,
    webhook_concurrency: WebhookConcurrencyOption = None,
    json_logs: Annotated[bool, typer.Option("--json-logs", help="Log as JSON lines.")] = False,
    metrics_port: Annotated[int | None, typer.Option(
        metavar="PORT", min=1, max=65535,
        help="Serve Prometheus metrics on this port (/metrics).")] = None,
    metrics_host: Annotated[str, typer.Option(
        metavar="HOST", help="Address the metrics port listens on.")] = "127.0.0.1",
) -> None:
    """Run fan-out, retention and delivery jobs until SIGTERM or Ctrl-C (finishing running jobs)."""
    from tidings.exporter import single_process

    single_process()  # before prometheus-client is imported
    from tidings import tracing
    from tidings.engine import Tidings
    from tidings.metrics import serve_metrics

    tracing.configure()  # OTEL_*: before the engine, whose SQL it traces
    tidings = _open(database_url)
    assert isinstance(tidings, Tidings)
    _logging(json_logs)
    runner = tidings.worker(concurrency=concurrency, poll_seconds=poll,
                            webhook_concurrency=webhook_concurrency)
    exporter = None
    if metrics_port:
        try:
            exporter = serve_metrics(tidings, metrics_host, metrics_port)
        except OSError as exc:
            err.print(f"[red]error:[/red] --metrics-port: cannot listen on {metrics_host}:"
                      f"{metrics_port} ({exc.strerror or exc})")
            raise typer.Exit(2) from None

    def stop(signum: int, _frame: FrameType | None) -> None:
        logging.getLogger("tidings.worker").info("signal %s: stopping after running jobs", signum)
        runner.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logging.getLogger("tidings.worker").info(
        "worker started: %s, %s", tidings.store.backend,
        ", ".join(f"{lane.name} {lane.threads}" for lane in runner.lanes))
    runner.run_forever()
    if exporter is not None:
        exporter.shutdown()
    tidings.close()


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(metavar="FILE", exists=True, dir_okay=False, readable=True,
                                         help="JSON Lines file (see docs/import.md).")],
    database_url: DatabaseOption = None,
    strict: Annotated[bool, typer.Option(help="Stop at the first bad line.")] = False,
) -> None:
    """Back-fill events, subscriptions, follows, mutes and read markers from JSON Lines."""
    from rich.progress import Progress

    from tidings.engine import Tidings
    from tidings.importer import import_lines

    tidings = _open(database_url)
    assert isinstance(tidings, Tidings)
    total = sum(1 for _ in path.open(encoding="utf-8"))
    with Progress(console=err, transient=True) as progress, path.open(encoding="utf-8") as lines:
        task = progress.add_task("importing", total=total)
        report = import_lines(tidings, lines, stop_on_error=strict,
                              progress=lambda n: progress.update(task, completed=n))
    table = Table("records", "imported")
    for kind, count in report.counts.items():
        table.add_row(kind, str(count))
    console.print(table)
    queued = tidings.queue.stats()["queued"]
    if queued:
        console.print(f"{queued:,} jobs queued: the imported events reach inboxes when a worker "
                      "runs them (`tidings worker`, or `tidings serve` without --no-worker)")
    for message in report.errors[:20]:
        err.print(f"[red]skipped[/red] {message}")
    if report.errors:
        err.print(f"{len(report.errors)} line(s) skipped")
        raise typer.Exit(1)


@app.command()
def jobs(database_url: DatabaseOption = None,
         failures: Annotated[int, typer.Option(
             metavar="N", help="Recent failures to list.")] = 10,
         retry: Annotated[list[int] | None, typer.Option(
             metavar="JOB", help="Queue again a job that failed for good (repeatable).")
         ] = None) -> None:
    """Show the job queue: queued, runnable, running, failed, queued per function, and recent
    failures; --retry JOB queues a job that failed for good again first."""
    from tidings.engine import Tidings

    tidings = _open(database_url)
    assert isinstance(tidings, Tidings)
    for job_id in retry or ():
        if not tidings.queue.retry(job_id):
            raise CommandError(f"job {job_id} has no final failure to retry (see `tidings jobs`)")
        console.print(f"job {job_id} queued again")
    stats = tidings.queue.stats()
    table = Table(*stats)
    table.add_row(*(str(v) for v in stats.values()))
    console.print(table)
    by_func = tidings.queue.counts_by_func()
    if by_func:
        per_func = Table("func", "queued")
        for name, count in sorted(by_func.items()):
            per_func.add_row(name, str(count))
        console.print(per_func)
    recent = tidings.queue.failures(failures)
    if recent:
        listing = Table("job", "func", "attempt", "final", "error")
        for failure in recent:
            listing.add_row(str(failure.job_id), failure.func, str(failure.attempt),
                            "yes" if failure.final else "no", failure.error[:80])
        console.print(listing)


@app.command("rebuild-hot-store")
def rebuild_hot_store(
    database_url: DatabaseOption = None,
    run: Annotated[bool, typer.Option(
        "--run/--no-run", help="Run the fan-out jobs of events from before the hot store's "
        "journal here (or leave them to the workers).")
    ] = True,
) -> None:
    """Refill the Redis hot store from SQL after a Redis loss: every key under its prefix goes,
    the journaled writes are replayed in order, then Redis answers again. Inboxes, read
    state, deletions, bundles and timelines come back exactly as they were."""
    from tidings.engine import Tidings
    from tidings.wiring import hot_store

    tidings = _open(database_url)
    assert isinstance(tidings, Tidings)
    hot = hot_store(tidings.store)
    if hot is None:
        raise typer.BadParameter("TIDINGS_HOT_STORE_URL is not set: there is no hot store")
    units, baseline = hot.rebuild()
    console.print(f"{units:,} units of work replayed")
    if baseline:  # a hot store first used before its journal: those events as before
        markers = hot.restore_markers()
        queued = tidings.redeliver_retained(upto=baseline)
        console.print(f"{markers:,} read watermarks restored, {queued:,} events from before "
                      "the journal queued for delivery")
        if run:
            ran = tidings.run_jobs()
            console.print(f"{ran:,} jobs run")
    tidings.close()


@app.command()
def bounce(
    address: Annotated[str, typer.Argument(metavar="ADDRESS", help="The address that bounced.")],
    database_url: DatabaseOption = None,
    reason: Annotated[str, typer.Option(
        metavar="TEXT", help="Why (kept with the record).")] = "hard bounce",
    clear: Annotated[bool, typer.Option("--clear", help="The address works again.")] = False,
) -> None:
    """Record a hard bounce: mail to ADDRESS stops (web delivery goes on); --clear undoes it."""
    from tidings.engine import Tidings

    tidings = _open(database_url)
    assert isinstance(tidings, Tidings)
    if clear:
        found = tidings.clear_bounce(address)
        console.print(f"{address}: mail resumes" if found else f"{address} was not bounced")
    else:
        tidings.report_bounce(address, reason)
        console.print(f"{address}: no more mail ({reason})")


user_app = typer.Typer(no_args_is_help=True, help="A person's data: export it, erase it.")
app.add_typer(user_app, name="user")


@user_app.command("export")
def user_export(
    user: Annotated[str, typer.Argument(metavar="USER", help="The user id.")],
    database_url: DatabaseOption = None,
) -> None:
    """Write everything kept about USER to standard output as JSON Lines (one record a line,
    each with its ``kind``), as GET /v1/users/USER/export streams it."""
    import json

    from tidings.engine import Tidings

    tidings = _open(database_url)
    assert isinstance(tidings, Tidings)
    try:
        for record in tidings.export_user(user):
            sys.stdout.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
            sys.stdout.write("\n")
    finally:
        tidings.close()


@user_app.command("erase")
def user_erase(
    user: Annotated[str, typer.Argument(metavar="USER", help="The user id.")],
    database_url: DatabaseOption = None,
) -> None:
    """Erase everything kept about USER, here and now (the job DELETE /v1/users/USER
    queues): the events they authored retracted from every inbox and timeline, every record
    of theirs removed, their name taken out of the records of others. Prints what went, by
    kind; again, or for a user never seen: nothing."""
    from tidings.engine import Tidings

    tidings = _open(database_url)
    assert isinstance(tidings, Tidings)
    try:
        removed = tidings.erase_user_now(user)
    finally:
        tidings.close()
    table = Table("kind", "records")
    for kind, count in removed.items():
        table.add_row(kind, f"{count:,}")
    console.print(table if removed else f"nothing kept about {escape(user)}")


@app.command()
def types(database_url: DatabaseOption = None) -> None:
    """List the declared event types."""
    from tidings.engine import Tidings

    tidings = _open(database_url)
    assert isinstance(tidings, Tidings)
    table = Table("name", "category", "section", "priority", "bundle", "audience")
    for event_type in tidings.types:
        table.add_row(event_type.name, event_type.category, event_type.section,
                      str(event_type.priority), event_type.bundle, ", ".join(event_type.audience))
    _print_whole(table)


@app.command("vapid-keys")
def vapid_keys() -> None:
    """Print a new VAPID key pair for Web Push: set TIDINGS_VAPID_PRIVATE_KEY to the first."""
    from tidings.channels.push.keys import generate

    private, public = generate()
    typer.echo(f"TIDINGS_VAPID_PRIVATE_KEY={private}")
    typer.echo(f"# public key (GET /v1/push/public-key serves it): {public}")


def _print_whole(table: Table) -> None:
    """Print ``table`` as wide as its cells need, past the terminal's width if it must: names
    are to be read and copied whole, never cut with "…"."""
    from rich.measure import Measurement

    needed = Measurement.get(console, console.options.update(width=100_000), table).maximum
    Console(width=max(console.width, needed)).print(table)


@app.command()
def demo(
    data_dir: Annotated[Path, typer.Option(
        metavar="DIR", help="Folder for the demo's SQLite file.")] =
        Path("tidings-demo"),
    host: Annotated[str, typer.Option(metavar="HOST", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(
        metavar="PORT", min=1, max=65535, help="Port to listen on.")] = 8000,
    events: Annotated[int, typer.Option(
        metavar="N", min=0, help="Events published at start.")] = 60,
    interval: Annotated[float, typer.Option(
        metavar="SECONDS", min=0.05, help="Seconds between events after.")
                        ] = 2.0,
    duration: Annotated[float | None, typer.Option(
        metavar="SECONDS", help="Stop after this many seconds.")
                        ] = None,
    seed: Annotated[int | None, typer.Option(
        metavar="N", help="Random seed (default: new each run).")] = None,
) -> None:
    """Run a small wiki on SQLite: the web inbox, live bundles, sign-in links. Ctrl-C stops."""
    from tidings.demo.run import run

    run(data_dir=data_dir, host=host, port=port, burst=events, interval=interval,
        duration=duration, seed=seed, console=console)


def _logging(json_logs: bool) -> None:
    from tidings.logs import configure

    configure(json_logs)


app.add_typer(typer.Typer(cls=LazyBench, no_args_is_help=True), name="bench",
              help=bench_help())


def main() -> None:
    try:
        app()
    except Exception as exc:
        message = explain(exc)
        if message is None:  # a defect: its traceback is the report
            raise
        if _debug["on"]:
            traceback.print_exc()
        err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
