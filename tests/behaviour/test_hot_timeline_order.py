"""One order for inbox and timeline on the Redis hot store and Redis Cluster: a post imported
with ``tidings import``, dated 2019, sits below today's posts in the inbox and in the mailbox
timeline, and still does after ``tidings rebuild-hot-store`` refilled both from SQL
(``tests/behaviour/test_timeline_order.py`` runs the same on the SQL stores and in memory)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from engines import TYPES, open_tidings
from redis_servers import delete_prefix
from test_timeline_order import (
    EXPECTED,
    NEWS,
    OLD_POST,
    inbox_posts,
    late_and_on_time,
    live_post,
    timeline_of,
    walk,
)
from tidings.cli import app
from tidings.clock import FrozenClock, SystemClock
from tidings.engine import Tidings


@pytest.fixture
def clock() -> FrozenClock:
    """Today, really: the jobs ``tidings import`` queues on the system clock are due for this
    process's workers."""
    return FrozenClock(SystemClock().now_us())


@pytest.fixture(params=["push", "hybrid"])
def tl(request: pytest.FixtureRequest, hot_url: str, sqlite_url: str, clock: FrozenClock,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[Tidings]:
    # the CLI commands below open the same stores
    monkeypatch.setenv("TIDINGS_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("TIDINGS_HOT_STORE_URL", hot_url)
    with open_tidings(sqlite_url, clock=clock, hot_store_url=hot_url, types=(*TYPES, NEWS),
                      timeline_model=request.param, celebrity_followers=1) as t:
        for event_type in (*TYPES, NEWS):  # stored, so the CLI's engine knows them too
            t.define_type(event_type)
        yield t


def test_an_imported_post_keeps_its_place_through_a_rebuild(
        tl: Tidings, clock: FrozenClock, hot_url: str, tmp_path: Path) -> None:
    for user in ("bob", "cid"):
        tl.follow(user, "ann")
    live_post(tl, clock, "live1")
    live_post(tl, clock, "live2")
    lines = tmp_path / "old.jsonl"
    lines.write_text(json.dumps(OLD_POST) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["import", str(lines)])
    assert result.exit_code == 0, result.output
    tl.run_jobs()
    live_post(tl, clock, "live3")
    expected = late_and_on_time(tl, clock) + EXPECTED

    def view() -> list[object]:
        return [inbox_posts(tl, "bob"), timeline_of(tl, "bob"),
                walk(tl, "bob", by="cursor"), walk(tl, "bob", by="max_id")]

    assert view() == [expected] * 4
    url = urlsplit(hot_url)
    delete_prefix(url._replace(query="").geturl(), parse_qs(url.query)["prefix"][0])
    result = CliRunner().invoke(app, ["rebuild-hot-store"])
    assert result.exit_code == 0, result.output
    assert view() == [expected] * 4  # the order SQL alone gives back
