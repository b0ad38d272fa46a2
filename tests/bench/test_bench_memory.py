"""The bench's memory and storage readings: RSS from /proc, processes found by their parent,
a sampler's start/peak/end arithmetic, and a table's bytes split by relation on every backend.

No figure is asserted, only that each reading is taken and adds up.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tidings_benchmarks import inbox_django, memory
from tidings_benchmarks.memory import RssSampler, Series, children, rss_bytes, serving_processes
from tidings_benchmarks.storage import relation_bytes, table_bytes
from tidings_benchmarks.stores import BenchStore

linux = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")


@linux
def test_rss_is_read_for_a_live_process_and_none_for_a_gone_one() -> None:
    import os

    assert (rss_bytes(os.getpid()) or 0) > 1024 * 1024
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert rss_bytes(child.pid) is None


@linux
def test_children_are_found_and_a_lone_server_serves_itself() -> None:
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']) "
        "for _ in range(2)]\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n")], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == b"ready"
        kids = children(parent.pid)
        assert len(kids) == 2
        assert serving_processes(parent.pid) == kids
        assert serving_processes(kids[0]) == [kids[0]]
    finally:
        for kid in children(parent.pid):
            subprocess.run(["kill", str(kid)], check=False)
        parent.kill()
        parent.wait()


def test_a_series_reports_start_peak_end_and_how_flat_it_stayed() -> None:
    mb = memory.MB
    series = Series(7, [(0.0, 100 * mb), (1.0, 120 * mb), (2.0, 110 * mb), (10.0, 105 * mb)])
    row = series.summary()
    assert (row["start_mb"], row["peak_mb"], row["end_mb"]) == (100.0, 120.0, 105.0)
    assert (row["drift_pct"], row["peak_growth_pct"]) == (5.0, 20.0)
    # 10 % of the way is t = 1.0: the reading of 120 MB, from which 105 is the farthest
    assert (row["warm_mb"], row["flat_pct"]) == (120.0, -12.5)
    assert Series(None).summary()["peak_mb"] is None


@linux
def test_a_sampler_reads_at_entry_and_exit_and_skips_gone_processes() -> None:
    import os

    with RssSampler(lambda: {"me": os.getpid(), "nobody": 2**22 + 12345}, interval=0.01) as rss:
        time.sleep(0.05)
    summaries = rss.summaries(["me", "nobody"])
    assert summaries["me"]["samples"] >= 2
    assert summaries["nobody"]["samples"] == 0 and summaries["nobody"]["peak_mb"] is None


def test_a_table_splits_into_its_rows_and_indexes(store_url: str) -> None:
    with BenchStore(store_url) as store:
        parts = relation_bytes(store.url, "notifications")
        # the rows and three indexes at least (the primary key apart too, but on MariaDB)
        assert "table" in parts and len(parts) >= 4, parts
        assert "ix_notifications_user_id_bundle_base_created_at_event_id" in parts, parts
        assert sum(parts.values()) == table_bytes(store.url, ["notifications"])["notifications"]


def test_the_django_like_baseline_table_is_measured_and_dropped(store_url: str,
                                                                backend: str) -> None:
    with BenchStore(store_url) as store:
        measured = inbox_django.measure(store.url)
        if backend != "postgresql":
            assert measured is None
            return
        assert measured is not None
        assert measured["rows"] == 0 and measured["indexes"] == 11  # an empty store
        assert measured["bytes"] == sum(p["bytes"] for p in measured["profile"]) > 0
        assert table_bytes(store.url, [inbox_django.TABLE])[inbox_django.TABLE] == 0
