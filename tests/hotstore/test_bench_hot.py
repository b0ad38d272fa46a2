"""``tidings bench inbox --store redis://…``: the hot store's figures beside the raw Redis
baseline, in one run that leaves no key behind."""

from __future__ import annotations

import redis
from typer.testing import CliRunner

from tidings.bench.cli import bench_app


def test_bench_inbox_on_redis_prints_ratios_and_cleans_up(redis_server: str) -> None:
    client = redis.Redis.from_url(redis_server)
    before = {k for k in client.scan_iter(match="tidings_bench_*")}
    result = CliRunner().invoke(bench_app, ["inbox", "--store", redis_server, "--scale",
                                            "0.005", "--rounds", "1", "--ops", "10",
                                            "--baseline"])
    assert result.exit_code == 0, result.output
    for figure in ("fan-out rows/s", "page of 20 /s", "unread count /s", "ratio"):
        assert figure in result.output
    assert {k for k in client.scan_iter(match="tidings_bench_*")} == before
