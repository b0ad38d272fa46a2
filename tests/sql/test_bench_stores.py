"""``tidings bench``'s throwaway stores (``tidings_benchmarks.stores.BenchStore``) on every SQL
backend: a database of their own, dropped after; analysed (and on PostgreSQL vacuumed) before a
round; between rounds tidings' tables emptied, the baselines' own tables kept."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url

from tidings.domain.events import Event
from tidings.engine import Tidings
from tidings_benchmarks.inbox import bench_types
from tidings_benchmarks.sql import SqlDatabase
from tidings_benchmarks.stores import BenchStore


def _databases(url: str) -> set[str]:
    db = SqlDatabase(url)
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
        with store.db.read() as conn:
            assert "notifications" in inspect(conn).get_table_names()
        assert "notifications" in store.tables and "alembic_version" not in store.tables
    if backend == "sqlite":
        assert Path(make_url(store_url).database or "").exists()
        assert not Path(make_url(store.url).database or "").exists()
    else:
        names = _databases(store_url)
        assert make_url(store_url).database in names
        assert store.name not in names


def test_a_bench_store_analyzes_and_on_postgresql_vacuums(store_url: str, backend: str) -> None:
    with BenchStore(store_url) as store:
        store.analyze()
        with store.db.read() as conn:
            if backend == "postgresql":  # index-only scans need the visibility map
                assert conn.execute(text(
                    "SELECT last_vacuum IS NOT NULL AND last_analyze IS NOT NULL FROM "
                    "pg_stat_user_tables WHERE relname = 'notifications'")).scalar_one()
            elif backend == "sqlite":
                assert conn.execute(text("SELECT count(*) FROM sqlite_master WHERE name = "
                                         "'sqlite_stat1'")).scalar_one() == 1


def test_a_bench_store_empties_tidings_tables_only(store_url: str) -> None:
    """Between rounds: tidings' tables emptied (but those kept), the schema's version and the
    baselines' own tables left as they are."""
    with BenchStore(store_url) as store:
        with store.db.write() as conn:
            conn.execute(text("CREATE TABLE baseline_rows (id INTEGER PRIMARY KEY)"))
            conn.execute(text("INSERT INTO baseline_rows (id) VALUES (1)"))
            for follower in ("a", "b"):
                conn.execute(text("INSERT INTO follows (follower, followee, created_at) "
                                  "VALUES (:f, 'c', 0)"), {"f": follower})
        t = Tidings.open(store.url, types=bench_types())
        try:
            t.publish(Event("mention", actor="a", object="page:Main", recipients=["b"]))
            t.run_jobs()
        finally:
            t.close()

        def count(table: str) -> int:
            with store.db.read() as conn:
                return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())

        assert count("notifications") == 1
        store.empty_tables(keep=("follows",))
        assert (count("notifications"), count("events"), count("follows")) == (0, 0, 2)
        store.empty_tables()
        assert count("follows") == 0
        assert count("baseline_rows") == 1 and count("alembic_version") == 1
