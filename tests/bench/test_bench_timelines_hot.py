"""``tidings bench timelines --store redis://…`` (and ``redis+cluster://…``): the hot store's
timelines beside raw_redis.py's commands, in one run that leaves no key behind."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from redis.cluster import RedisCluster
from typer.testing import CliRunner

from tidings_benchmarks.cli import bench_app


def _keys(url: str) -> set[bytes]:
    parts = urlsplit(url)
    prefix = parse_qs(parts.query)["prefix"][0]
    if parts.scheme.endswith("+cluster"):
        host, port = parts.netloc.split(",")[0].rsplit(":", 1)
        client = RedisCluster(host=host, port=int(port))
        try:
            return set(client.scan_iter(match=f"{prefix}*", target_nodes=RedisCluster.ALL_NODES))
        finally:
            client.close()
    plain = redis.Redis.from_url(parts._replace(query="").geturl())
    return set(plain.scan_iter(match=f"{prefix}*"))


def test_bench_timelines_on_the_hot_store_prints_ratios_and_cleans_up(
        hot_url: str, tmp_path: Path) -> None:
    out = tmp_path / "timelines.json"
    result = CliRunner().invoke(bench_app, [
        "timelines", "--store", hot_url, "--scale", "0.002", "--graphs", "skewed",
        "--rounds", "1", "--ops", "3", "--submits", "3", "--baseline", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "raw_redis.py" in result.output
    data = json.loads(out.read_text())
    assert data["backend"] in ("redis", "redis-cluster")
    assert data["comparisons"]
    # against raw_redis.py the goal is 0.8x its fan-out and its id page, push alone (issue 11)
    goals = {c["figure"]: c["goal_ratio"] for c in data["comparisons"]}
    assert goals["push: submit (skewed)"] == goals["push: first page (skewed)"] == 0.8
    assert goals["pull: first page (skewed)"] is None
    for c in data["comparisons"]:
        assert c["tidings"]["per_second"] > 0 and c["baseline"]["per_second"] > 0
        assert c["ratio"] == pytest.approx(
            c["tidings"]["per_second"] / c["baseline"]["per_second"], rel=0.01)
    for row in data["storage"]:
        assert row["goal_ratio"] is None  # W1's storage goal is against the seed's SQL
        assert row["seed_bytes"] > 0
        assert (row["timelines_bytes"] > 0) == (row["mailbox_rows"] > 0)
        if row["model"] == "push":
            assert row["mailbox_rows"] > 0
    assert _keys(hot_url) == set()
