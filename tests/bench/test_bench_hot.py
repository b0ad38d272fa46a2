"""``tidings bench inbox --store redis://…``: the hot store's figures beside the raw Redis
baseline and the floor of the seed's layout, in one run that leaves no key behind."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from redis.cluster import RedisCluster
from typer.testing import CliRunner

from redis_servers import client_of, delete_prefix
from tidings_benchmarks.cli import bench_app
from tidings_benchmarks.hot_floor import FIELDS, Floor


def _client(kind: str, request: pytest.FixtureRequest) -> tuple[str, Any]:
    url = (request.getfixturevalue("redis_cluster").url if kind == "cluster"
           else request.getfixturevalue("redis_server"))
    return url, client_of(url)


def _bench_keys(client: Any) -> set[bytes]:
    if isinstance(client, RedisCluster):
        return set(client.scan_iter(match="tidings_bench_*",
                                    target_nodes=RedisCluster.ALL_NODES))
    return set(client.scan_iter(match="tidings_bench_*"))


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_bench_inbox_on_redis_prints_ratios_and_cleans_up(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server, client = _client(kind, request)
    before = _bench_keys(client)
    out = tmp_path / "hot.json"
    result = CliRunner().invoke(bench_app, ["inbox", "--store", server, "--scale",
                                            "0.005", "--rounds", "1", "--ops", "10",
                                            "--baseline", "--json", str(out)])
    assert result.exit_code == 0, result.output
    for figure in ("fan-out rows/s", "page of 20 /s", "page of 20, vs ids + bodies /s",
                   "unread count /s", "ratio"):
        assert figure in result.output
    data = json.loads(out.read_text())
    comparisons = data["comparisons"]  # as the SQL workloads write
    assert [c["figure"] for c in comparisons] == [
        "fan-out rows/s", "page of 20 /s", "page of 20, vs ids + bodies /s", "unread count /s"]
    # issue 11's goals: within 80 % of raw_redis.py's Lua fan-out and id page
    assert [c["goal_ratio"] for c in comparisons] == [0.8, 0.8, None, None]
    assert "≥ 0.8x" in result.output
    for c in comparisons:
        assert c["tidings"]["per_second"] > 0 and c["baseline"]["per_second"] > 0
        assert c["ratio"] == pytest.approx(
            c["tidings"]["per_second"] / c["baseline"]["per_second"], rel=0.01)
    # the seed's layout's floor beside them, for the two figures with goals
    floors = data["data"]["floors"]
    assert sorted(floors) == ["fan-out rows/s", "page of 20 /s"]
    assert all(rate > 0 for rate in floors.values())
    assert "beside the floor of the seed's layout" in " ".join(result.output.split())
    assert _bench_keys(client) == before
    client.close()


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_the_layout_floor_keeps_rows_once_capped_and_pages_them_with_their_fields(
        kind: str, request: pytest.FixtureRequest) -> None:
    """The floor does the layout's work for real: a message written twice is written once
    (the idempotency check), each user keeps the newest ``cap`` rows with the id and unread
    sets beside them, and a page returns the newest rows with their fields."""
    url, client = _client(kind, request)
    prefix = f"tidings_bench_{secrets.token_hex(4)}:"
    tag = "{raw}" if kind == "cluster" else ""
    floor = Floor(client, prefix, tag, cap=5, page=3)
    users = ["ann", "bo"]
    try:
        for event in range(1, 9):
            floor.fan_out(event, 1000 + event, users)
        floor.fan_out(8, 1008, users)  # again: nothing written
        assert floor.written == 16
        keys = f"{prefix}{tag}fl:"
        for user in users:
            assert client.zrange(f"{keys}{user}:ids", 0, -1) == [b"4", b"5", b"6", b"7", b"8"]
            assert client.zcard(f"{keys}{user}:unread") == 5
            assert not client.exists(f"{keys}{user}:n:3")
            page = floor.page(user)
            assert [i for i, _ in page] == [b"8", b"7", b"6"]
            assert all(len(fields) == FIELDS for _, fields in page)
            assert page[0][1][b"c"] == b"1008"
    finally:
        client.close()
        delete_prefix(url, prefix)
