"""``tidings bench``: its arithmetic and a tiny run of each workload (its throwaway stores:
``tests/sql/test_bench_stores.py``).

No figure is asserted (the machines are shared and noisy): only that the commands run end to
end, write the JSON they promise, and never touch a database they did not create.
"""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from tidings.domain.timeline import high_water
from tidings_benchmarks.cli import _counts, bench_app
from tidings_benchmarks.compare import comparison_table, sweep_table
from tidings_benchmarks.measure import Latencies, median, percentile

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


def test_bench_fanout_baseline_sweep_and_plot(tmp_path: Path) -> None:
    out, png = tmp_path / "fanout.json", tmp_path / "fanout.png"
    result = runner.invoke(bench_app, [
        "fanout", "--subscribers", "25", "--workers", "1,2", "--rounds", "2",
        "--chunk-size", "10", "--push-users", "60", "--push-events", "4", "--baseline",
        "--prefill", "3", "--sweep", "--json", str(out), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["backend"] == "sqlite"
    assert data["notes"]  # SQLite ran one worker process only
    (row,) = data["results"]
    assert (row["subscribers"], row["workers"], row["chunk_jobs"], row["rounds"]) == (25, 1, 3, 2)
    assert row["deliveries_per_second"] > 0
    assert row["p99_seconds"] > 0 and (row["lost"], row["doubled"]) == (0, 0)
    assert {"goal_seconds", "goal_met"} <= row.keys()
    assert_memory(row["memory"]["processes"], ["worker 1"])
    assert {"goal_pct", "max_deviation_pct", "goal_met"} <= row["memory"].keys()
    assert data["push"]["users"] == 60 and data["push"]["followers_per_user"] == 43
    assert [r["figure"] for r in data["comparisons"]] == [
        "deliveries, 25 followers, 1 worker(s) vs INSERT…SELECT",
        "deliveries, 25 followers, 1 worker(s) vs COPY",
        "events to ~43 followers, 1 worker(s)"]
    assert_compared(data, lean=True)
    assert {"1", "baseline", "lean"} == data["push"]["seconds"].keys()
    # every follower held 3 rows on each side before the rounds, counted in the server
    (held,) = data["prefill"]
    assert {k: held[k] for k in ("subscribers", "per_follower", "events", "rows",
                                 "mailbox_rows", "lean_rows")} == {
        "subscribers": 25, "per_follower": 3, "events": 3, "rows": 75, "mailbox_rows": 75,
        "lean_rows": 75}
    pushed = data["push"]["prefill"]
    assert pushed["rows"] == pushed["mailbox_rows"] == pushed["lean_rows"] >= 60 * 3
    # the raw sides ran in the rounds of the worker count they are compared with
    assert data["push"]["raw_seconds_by_workers"]["1"].keys() == {"baseline", "lean"}
    assert len(data["push"]["raw_seconds_by_workers"]["1"]["lean"]) == 2
    assert list(data["sweep"]["series"]) == [
        "deliveries, 25 followers (rows/s)", "events to ~43 followers (events/s)"]
    assert png.read_bytes().startswith(PNG)


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
    assert_storage(data["storage"], data["data"]["notifications"])


def assert_storage(storage: dict[str, Any], rows: int) -> None:
    """Bytes per notification row, its parts adding up, beside the anchor and the goal."""
    assert storage["rows"] == rows
    assert [f["figure"] for f in storage["figures"]] == [
        "notifications", "with events", "every inbox table"]
    assert 0 < storage["bytes_per_row"] == storage["figures"][0]["bytes_per_row"]
    assert (storage["anchor_bytes_per_row"], storage["goal_bytes_per_row"]) == (195, 100)
    assert {"ratio_to_anchor", "goal_met", "column_widths"} <= storage.keys()
    relations = {p["relation"]: p["bytes"] for p in storage["profile"]}
    assert "table" in relations and len(relations) >= 2  # the rows and at least one index
    assert sum(relations.values()) == storage["table_bytes"]["notifications"]


def assert_memory(processes: dict[str, Any], labels: list[str]) -> None:
    """Each process was read at least at the start and the end of the phase (on Linux)."""
    if not Path("/proc/self/status").exists():
        assert all(row["peak_mb"] is None for row in processes.values())
        return
    assert [label for label in processes if label in labels] == labels, processes
    for row in processes.values():
        assert row["samples"] >= 2 and row["pid"] > 0, row
        assert 0 < row["start_mb"] <= row["peak_mb"] and row["end_mb"] <= row["peak_mb"], row
        assert {"drift_pct", "peak_growth_pct", "warm_mb", "flat_pct"} <= row.keys()


PNG = b"\x89PNG\r\n\x1a\n"


def assert_compared(data: dict[str, Any], *, lean: bool = False) -> None:
    """Every figure has a tidings value, a baseline value and their ratio (never a speed);
    with ``lean``, the lean layout's raw side and tidings' ratio to it too."""
    assert data["comparisons"]
    for row in data["comparisons"]:
        assert row["tidings"]["per_second"] > 0, row
        assert row["baseline"]["per_second"] > 0, row
        assert row["baseline"]["statement"] and row["baseline"]["anchor"]
        assert row["ratio"] == pytest.approx(
            row["tidings"]["per_second"] / row["baseline"]["per_second"], rel=0.01)
        assert ("lean" in row) == lean, row
        if lean:
            assert row["lean"]["per_second"] > 0 and row["lean"]["statement"], row
            assert row["ratio_to_lean"] == pytest.approx(
                row["tidings"]["per_second"] / row["lean"]["per_second"], rel=0.01)
    for points in data.get("sweep", {}).get("series", {}).values():
        assert points
        for p in points:
            assert p["tidings"] > 0 and p["baseline"] > 0 and p["ratio"] is not None, p
    # the tables print without error, whatever was measured
    Console(file=io.StringIO(), width=200).print(
        comparison_table("t", data["comparisons"]),
        *([sweep_table("s", data["sweep"])] if "sweep" in data else []))


def test_bench_inbox_baseline_sweep_and_plot(tmp_path: Path) -> None:
    out, png = tmp_path / "inbox.json", tmp_path / "inbox.png"
    result = runner.invoke(bench_app, [
        "inbox", "--scale", "0.001", "--rounds", "1", "--ops", "5", "--baseline", "--sweep",
        "--sizes", "20,60", "--json", str(out), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert "ratio" in result.output
    data = json.loads(out.read_text())
    assert [r["figure"] for r in data["comparisons"]] == [
        "unread count", "first page (20, bundled)", "mark all read"]
    assert_compared(data, lean=True)
    assert all(row["lean"]["latency"]["count"] == 5 for row in data["comparisons"])
    assert [p["x"] for p in data["sweep"]["series"]["unread count"]] == [20, 60]
    assert_storage(data["storage"], data["data"]["notifications"])
    lean = data["storage"]["lean"]
    assert lean["bytes"] == sum(lean["tables"].values()) > 0
    assert {"lean_inbox", "lean_ev", "lean_names"} <= lean["tables"].keys()
    assert lean["bytes_per_row"] == round(lean["bytes"] / data["data"]["notifications"], 1)
    assert "tidings ÷ lean" in result.output and "lean raw: every lean table" in result.output
    assert "bytes on disk per notification row" in result.output
    assert png.read_bytes().startswith(PNG)


def test_bench_http_baseline_and_plot(tmp_path: Path) -> None:
    out, png = tmp_path / "http.json", tmp_path / "http.png"
    result = runner.invoke(bench_app, [
        "http", "--scale", "0.0005", "--rounds", "1", "--seconds", "0.2", "--processes", "1",
        "--concurrency", "2", "--baseline", "--json", str(out), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert [r["figure"] for r in data["comparisons"]] == [
        "GET unread-count", "GET first page (20)", "POST /v1/events"]
    assert_compared(data)
    assert all(row["tidings"]["latency"]["count"] > 0 and row["baseline"]["latency"]["count"] > 0
               for row in data["comparisons"])
    # publishing is timed with the worker paused (as the baseline, which fans nothing out),
    # then with it fanning out meanwhile: both rows, every event fanned out after each
    assert [r["figure"] for r in data["results"]] == [
        "GET unread-count", "GET first page (20)", "POST /v1/events",
        "POST /v1/events, fan-out meanwhile"]
    assert all(r["latency"]["count"] > 0 and r["errors"] == 0 for r in data["results"])
    memory = data["memory"]
    assert memory["goal_mb"] == 150
    assert {"supported", "tidings_peak_mb", "baseline_peak_mb", "ratio", "goal_met"} <= \
        memory.keys()
    sides = {label.split(" [")[0] for label in memory["processes"]}
    if memory["supported"]:
        assert sides == {"tidings serve", "the baseline app"}
        assert memory["tidings_peak_mb"] > 0 and memory["baseline_peak_mb"] > 0
        assert_memory(memory["processes"], [])
    assert "W4 memory" in result.output
    assert png.read_bytes().startswith(PNG)


def test_plot_without_matplotlib_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    result = runner.invoke(bench_app, ["inbox", "--plot", str(tmp_path / "x.png")])
    assert result.exit_code == 2
    assert "pip install -e './benchmarks[plot]'" in result.output
    assert not (tmp_path / "x.png").exists()


def test_bench_timelines_baseline_json_and_plot(tmp_path: Path) -> None:
    out, png = tmp_path / "timelines.json", tmp_path / "timelines.png"
    result = runner.invoke(bench_app, [
        "timelines", "--scale", "0.002", "--rounds", "1", "--ops", "5", "--submits", "5",
        "--submit-batch", "2", "--baseline", "--json", str(out), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert "seed SQL" in result.output and "article (2008)" in result.output
    assert "submit: 2 messages per publish_many" in " ".join(result.output.split())
    data = json.loads(out.read_text())
    assert data["settings"]["submit_batch"] == 2
    assert [g["graph"] for g in data["data"]] == ["uniform", "skewed"]
    assert all(g["users"] == 20 and g["messages"] == 2000 for g in data["data"])
    models = [m for m in ("push", "pull", "hybrid")
              if any(r["model"] == m for r in data["results"])]
    assert models[0] == "push"
    assert [r["figure"] for r in data["comparisons"]] == [
        f"{m}: {f} ({g})" for g in ("uniform", "skewed") for m in models
        for f in ("submit", "first page", "later page")]
    assert_compared(data)
    for row in data["storage"]:
        assert row["total_bytes"] >= row["timelines_and_events_bytes"] > 0
        assert row["seed_bytes"] > 0 and row["ratio"] is not None
        if row["model"] == "push":  # 20 users at most the cap's high-water mark each
            assert 0 < row["mailbox_rows"] <= 20 * high_water(800)
    assert png.read_bytes().startswith(PNG)


def test_bench_timelines_runs_on_every_sql_backend(store_url: str, tmp_path: Path) -> None:
    """Each model's pages are checked against the seed's naive join inside the run, and the
    mailbox rows of each submit are counted: a wrong answer exits non-zero."""
    out = tmp_path / "timelines.json"
    result = runner.invoke(bench_app, [
        "timelines", "--store", store_url, "--scale", "0.002", "--graphs", "skewed",
        "--rounds", "1", "--ops", "3", "--submits", "3", "--baseline", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert_compared(data)
    assert {row["graph"] for row in data["storage"]} == {"skewed"}
    seed = {row["figure"]: row["baseline"] for row in data["comparisons"]}
    # the seed's own push statements (two, one transaction) on every backend
    assert "INSERT INTO mailbox (user_id,message_id)" in seed["push: submit (skewed)"]["statement"]
    if data["backend"] != "postgresql":
        assert "raw_comparisons" not in data and "floor_comparisons" not in data
        return
    # PostgreSQL: the seed's stored procedure as one statement, and beside it the raw limit
    assert "fetch_timeline_tt" in seed["pull: first page (skewed)"]["statement"]
    assert "fetch_timeline_ids2" in seed["pull: later page (skewed)"]["anchor"]
    raw = {row["figure"]: row for row in data["raw_comparisons"]}
    assert sorted(raw) == sorted(f"{f} (skewed)" for f in (
        "push: submit", "hybrid: submit", "pull: first page", "pull: later page"))
    assert "LATERAL" in raw["pull: first page (skewed)"]["baseline"]["statement"]
    assert "WITH m AS" in raw["push: submit (skewed)"]["baseline"]["statement"]
    assert_compared({"comparisons": data["raw_comparisons"]})
    assert "beside the raw limit" in " ".join(result.output.split())
    # push submit beside its SQL floor, with the cap and without (push only: the floor is
    # tidings' push path)
    [floor] = data["floor_comparisons"]
    assert floor["figure"] == "push: submit (skewed)" and floor["goal_ratio"] == 1.25
    for side in ("tidings", "floor", "floor_uncapped"):
        assert floor[side]["per_second"] > 0 and floor[side]["ratio"] is not None
    assert floor["seed"]["per_second"] > 0
    assert "beside its SQL floor" in " ".join(result.output.split())


def test_bench_timelines_rounds_start_from_full_mailboxes() -> None:
    """Each round's submits are checked row by row against the followers due; a round must
    start from the mailboxes the history left (full, with true bounds). Left with the bounds
    of rows the cleanup deleted, later rounds' caps trimmed the round's own entries, and the
    fifth round came out short."""
    result = runner.invoke(bench_app, [
        "timelines", "--scale", "0.005", "--rounds", "5", "--ops", "3", "--submits", "300",
        "--submit-batch", "50", "--graphs", "uniform", "--models", "push,hybrid"])
    assert result.exit_code == 0, result.output


def test_bench_timelines_refuses_unknown_models_and_graphs() -> None:
    for option, value in (("--models", "push,fanin"), ("--graphs", "ring")):
        result = runner.invoke(bench_app, ["timelines", option, value])
        assert result.exit_code == 2
        assert "choose from" in result.output
