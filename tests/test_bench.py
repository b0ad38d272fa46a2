"""``tidings bench``: its arithmetic, its throwaway stores, and a tiny run of each workload.

No figure is asserted (the machines are shared and noisy): only that the commands run end to
end, write the JSON they promise, and never touch a database they did not create.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import typer
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from tidings.bench.cli import _counts, bench_app
from tidings.bench.measure import Latencies, median, percentile
from tidings.bench.stores import BenchStore
from tidings.store.sql.database import Database

runner = CliRunner()


def test_percentiles_interpolate_between_ranks() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([3.0], 90) == 3.0
    assert math.isnan(percentile([], 50))
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert Latencies((0.001, 0.002, 0.003)).to_dict()["p50_ms"] == pytest.approx(2.0)


def test_count_lists_are_scaled_and_checked() -> None:
    assert _counts("10000,100000", "--subscribers", 0.5) == (5000, 50000)
    assert _counts("1_000, 3", "--workers") == (1000, 3)
    assert _counts("10", "--subscribers", 0.001) == (1,)
    for bad in ("", "10,x", "0", "-4"):
        with pytest.raises(typer.BadParameter):
            _counts(bad, "--subscribers")


def _databases(url: str) -> set[str]:
    db = Database(url, pool_size=0)
    try:
        with db.read() as conn:
            if db.backend == "postgresql":
                return set(conn.execute(text("SELECT datname FROM pg_database")).scalars())
            return set(conn.execute(text("SELECT schema_name FROM "
                                         "information_schema.schemata")).scalars())
    finally:
        db.dispose()


def test_a_bench_store_is_its_own_and_is_dropped(store_url: str, backend: str) -> None:
    store = BenchStore(store_url)
    assert store.url != store_url
    with store:
        db = Database(store.url, pool_size=0)
        try:
            with db.read() as conn:
                assert "notifications" in inspect(conn).get_table_names()
        finally:
            db.dispose()
    if backend == "sqlite":
        assert Path(make_url(store_url).database or "").exists()
        assert not Path(make_url(store.url).database or "").exists()
    else:
        names = _databases(store_url)
        assert make_url(store_url).database in names
        assert store.name not in names


def test_bench_fanout_runs_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "fanout.json"
    result = runner.invoke(bench_app, [
        "fanout", "--subscribers", "25", "--workers", "1,2", "--rounds", "2",
        "--chunk-size", "10", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["backend"] == "sqlite"
    assert data["notes"]  # SQLite ran one worker process only
    (row,) = data["results"]
    assert (row["subscribers"], row["workers"], row["chunk_jobs"], row["rounds"]) == (25, 1, 3, 2)
    assert row["deliveries_per_second"] > 0


def test_bench_inbox_runs_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "inbox.json"
    result = runner.invoke(bench_app, [
        "inbox", "--scale", "0.001", "--rounds", "1", "--ops", "5", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["data"]["users"] == 10
    assert data["data"]["notifications"] >= 1000
    assert 0.3 <= data["data"]["read_share"] < 0.6
    assert [r["figure"] for r in data["results"]] == [
        "unread count", "first page (20, bundled)", "mark all read"]
    assert all(r["latency"]["count"] > 0 for r in data["results"])


def test_a_bench_store_empties_only_itself(store_url: str) -> None:
    other = Database(store_url, pool_size=0)
    try:
        with BenchStore(None) as store, pytest.raises(ValueError, match="not this bench's"):
            store.empty_tables(other)
    finally:
        other.dispose()
