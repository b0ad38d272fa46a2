"""The command line as a new user meets it: --version, help that reads cleanly, and what
`tidings jobs` shows an operator."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engines import enqueue, open_tidings
from tidings import __version__
from tidings.cli import app
from tidings.cli_errors import CommandError
from tidings.domain.types import EventType
from tidings.jobs.model import JobSpec

runner = CliRunner()
COMMANDS = [[], ["serve"], ["worker"], ["demo"], ["migrate"], ["import"], ["jobs"], ["bounce"],
            ["types"], ["user"], ["user", "export"], ["user", "erase"], ["bench"],
            ["bench", "inbox"], ["bench", "fanout"], ["bench", "http"], ["bench", "timelines"]]


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"tidings {__version__}"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "tidings")
def test_help_shows_no_type_placeholders(command: list[str]) -> None:
    """Options read `--port PORT`, flags `--clear`: never `--help <bool>` or `--store <str>`."""
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    options = [line for line in result.output.splitlines() if line.lstrip().startswith("--")]
    assert options
    assert not [line for line in options if re.search(r"<[a-z ]+>", line)], result.output


def test_bench_help_explains_the_workload_names() -> None:
    result = runner.invoke(app, ["bench", "--help"])
    for name, meaning in (("W1", "timelines"), ("W2", "inbox"), ("W3", "fanout"),
                          ("W4", "http")):
        assert re.search(rf"{meaning} is {name}", result.output), result.output


def test_jobs_shows_queued_jobs_per_function(store_url: str) -> None:
    with open_tidings(store_url) as t:
        t.publish_many([{"type": "mention", "actor": "alice", "recipients": ["bob"]}] * 2)
        enqueue(t, JobSpec("retention", {}))

    result = runner.invoke(app, ["jobs", "--database-url", store_url])

    assert result.exit_code == 0, result.output
    rows = [re.split(r"\s*│\s*", line.strip("│ ")) for line in result.output.splitlines()
            if "│" in line]
    assert ["fanout", "2"] in rows
    assert ["retention", "1"] in rows


def test_jobs_retry_queues_a_job_that_failed_for_good_again(store_url: str) -> None:
    with open_tidings(store_url) as t:
        enqueue(t, JobSpec("webhook", {"url": "https://x.example"}))
        (job,) = t.queue.claim(1)
        t.store.transact(lambda tx: tx.jobs.record_failure(job, "answered 500", final=True,
                                                           now=t.clock.now_us()))
        t.store.transact(lambda tx: tx.jobs.complete(job))

    result = runner.invoke(app, ["jobs", "--database-url", store_url, "--retry", str(job.id)])
    assert result.exit_code == 0, result.output
    assert f"job {job.id} queued again" in result.output
    rows = [re.split(r"\s*│\s*", line.strip("│ ")) for line in result.output.splitlines()
            if "│" in line]
    assert ["webhook", "1"] in rows

    again = runner.invoke(app, ["jobs", "--database-url", store_url, "--retry", str(job.id)])
    assert isinstance(again.exception, CommandError)  # `tidings` prints it as one line, exit 2
    assert f"job {job.id} has no final failure to retry" in str(again.exception)


def test_import_says_a_worker_must_run_the_jobs_it_queued(store_url: str, tmp_path: Path) -> None:
    with open_tidings(store_url, types=()) as t:
        t.define_type(EventType("mention", audience=("recipients",)))
    lines = tmp_path / "import.jsonl"
    lines.write_text("\n".join(json.dumps(record) for record in [
        {"kind": "event", "type": "mention", "actor": "alice", "recipients": ["bob"]},
        {"kind": "event", "type": "mention", "actor": "carol", "recipients": ["bob"]},
    ]) + "\n")

    result = runner.invoke(app, ["import", str(lines), "--database-url", store_url])

    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "2 jobs queued" in said and "tidings worker" in said, result.output


def test_types_shows_long_names_whole(store_url: str) -> None:
    name = "very-long-event-type-name." + "x" * 38  # 64 characters, the longest allowed
    with open_tidings(store_url, types=()) as t:
        t.define_type(EventType(name, category="c" * 64,
                                audience=("recipients", "object_subscribers", "actor_followers")))

    result = runner.invoke(app, ["types", "--database-url", store_url])

    assert result.exit_code == 0, result.output
    assert name in result.output and "c" * 64 in result.output, result.output
    assert "recipients, object_subscribers, actor_followers" in result.output, result.output


def test_migrate_says_where_the_schema_was_and_is(empty_store_url: str) -> None:
    first = runner.invoke(app, ["migrate", "--database-url", empty_store_url])
    again = runner.invoke(app, ["migrate", "--database-url", empty_store_url])

    assert first.exit_code == 0 and again.exit_code == 0, first.output + again.output
    moved = re.fullmatch(r"schema at (\d{4}) \(was empty\)", first.output.strip())
    assert moved, first.output
    assert again.output.strip() == f"schema at {moved[1]} (unchanged)"
    with open_tidings(empty_store_url) as t:
        t.check_schema()  # at head: what the server and the worker ask of it


def test_rebuild_hot_store_needs_a_hot_store(store_url: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIDINGS_HOT_STORE_URL", raising=False)

    result = runner.invoke(app, ["rebuild-hot-store", "--database-url", store_url])

    assert result.exit_code == 2
    assert "TIDINGS_HOT_STORE_URL is not set: there is no hot store" in result.output


def test_user_export_writes_json_lines_and_erase_removes_them(store_url: str) -> None:
    with open_tidings(store_url) as t:
        t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
                   "payload": {"text": "hi"}})
        t.run_jobs()
        t.follow("bob", "alice")

    result = runner.invoke(app, ["user", "export", "bob", "--database-url", store_url])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.output.splitlines()]
    assert records[0]["kind"] == "user" and records[0]["user"] == "bob"
    (note,) = [r for r in records if r["kind"] == "notification"]
    assert (note["actor"], note["payload"]) == ("alice", {"text": "hi"})
    assert [r["user"] for r in records if r["kind"] == "follow"] == ["alice"]

    refused = runner.invoke(app, ["user", "export", "no body", "--database-url", store_url])
    assert refused.exit_code != 0
    assert "user" in str(refused.exception or refused.output)

    erased = runner.invoke(app, ["user", "erase", "bob", "--database-url", store_url])
    assert erased.exit_code == 0, erased.output
    removed = dict(re.findall(r"│ (\w+)\s+│ (\d+)\s+│", erased.output))
    assert {k: removed.get(k) for k in ("user", "notification", "follow")} == {
        "user": "1", "notification": "1", "follow": "1"}, erased.output
    exported = runner.invoke(app, ["user", "export", "bob", "--database-url", store_url])
    assert [json.loads(line)["kind"] for line in exported.output.splitlines()] == ["user"]
    again = runner.invoke(app, ["user", "erase", "bob", "--database-url", store_url])
    assert (again.exit_code, again.output.strip()) == (0, "nothing kept about bob")
