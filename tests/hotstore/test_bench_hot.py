"""``tidings bench inbox --store redis://…``: the hot store's figures beside the raw Redis
baseline, in one run that leaves no key behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from tidings.bench.cli import bench_app


def test_bench_inbox_on_redis_prints_ratios_and_cleans_up(redis_server: str,
                                                           tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_server)
    before = {k for k in client.scan_iter(match="tidings_bench_*")}
    out = tmp_path / "hot.json"
    result = CliRunner().invoke(bench_app, ["inbox", "--store", redis_server, "--scale",
                                            "0.005", "--rounds", "1", "--ops", "10",
                                            "--baseline", "--json", str(out)])
    assert result.exit_code == 0, result.output
    for figure in ("fan-out rows/s", "page of 20 /s", "page of 20, vs ids + bodies /s",
                   "unread count /s", "ratio"):
        assert figure in result.output
    comparisons = json.loads(out.read_text())["comparisons"]  # as the SQL workloads write
    assert [c["figure"] for c in comparisons] == [
        "fan-out rows/s", "page of 20 /s", "page of 20, vs ids + bodies /s", "unread count /s"]
    # issue 11's goals: within 80 % of raw_redis.py's Lua fan-out and id page
    assert [c["goal_ratio"] for c in comparisons] == [0.8, 0.8, None, None]
    assert "≥ 0.8x" in result.output
    for c in comparisons:
        assert c["tidings"]["per_second"] > 0 and c["baseline"]["per_second"] > 0
        assert c["ratio"] == pytest.approx(
            c["tidings"]["per_second"] / c["baseline"]["per_second"], rel=0.01)
    assert {k for k in client.scan_iter(match="tidings_bench_*")} == before
