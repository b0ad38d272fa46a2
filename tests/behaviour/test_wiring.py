"""The composition root: which store a URL opens, the parts an installation is built of, the
job handler table and a worker's lanes."""

from __future__ import annotations

import secrets
from pathlib import Path

from redis_servers import delete_prefix
from tidings import wiring
from tidings.channels import outbound_channels
from tidings.channels.webhook import WEBHOOK
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.engine import Tidings
from tidings.fanout.specs import FANOUT, FANOUT_CHUNK, RETENTION, TRIM, UNSNOOZE
from tidings.jobs.model import JobSpec
from tidings.services.people import ERASE


def test_a_url_chooses_its_store(tmp_path: Path) -> None:
    clock = FrozenClock()
    memory = wiring.open_store("memory://", clock)
    sql = wiring.open_store(f"sqlite:///{tmp_path / 'one.db'}", clock)
    try:
        assert (memory.backend, sql.backend) == ("memory", "sqlite")
        assert wiring.hot_store(memory) is None and wiring.hot_store(sql) is None
    finally:
        sql.close()


def test_a_hot_store_url_puts_inboxes_in_redis(tmp_path: Path, redis_server: str) -> None:
    prefix = f"t{secrets.token_hex(5)}:"
    config = Config.from_env(database_url=f"sqlite:///{tmp_path / 'hot.db'}",
                             hot_store_url=f"{redis_server}?prefix={prefix}")
    store = wiring.store_of(config, FrozenClock())
    try:
        assert store.backend == "sqlite+redis"
        assert wiring.hot_store(store) is store
    finally:
        store.close()
        delete_prefix(redis_server, prefix)


def test_the_handler_table_holds_fanout_maintenance_and_every_channels_jobs() -> None:
    channels = outbound_channels()
    brought = {name for channel in channels for name in channel.handlers}

    table = wiring.handlers(channels)

    assert WEBHOOK in brought
    assert set(table) == {FANOUT, FANOUT_CHUNK, TRIM, RETENTION, UNSNOOZE, ERASE} | brought


def test_the_channels_an_installation_delivers_over_follow_its_settings() -> None:
    def enabled(**settings: str) -> list[str]:
        config = Config.from_env({}, database_url="memory://", **settings)
        return wiring.assemble(config, FrozenClock(), wiring.store_of(config, FrozenClock())
                               ).enabled_channels

    assert enabled() == ["web"]
    assert enabled(smtp_url="smtp://127.0.0.1:2525") == ["web", "email"]
    assert enabled(webhook_secret="s" * 32) == ["web", "webhook"]


def test_the_jobs_a_unit_queued_are_observed_once_it_commits() -> None:
    seen: list[tuple[str, float]] = []
    with Tidings(Config.from_env({}, database_url="memory://")) as t:
        t.listeners.append(lambda name, value: seen.append((name, value)))
        t.store.transact(lambda tx: tx.jobs.enqueue_many(
            [JobSpec("retention", {}), JobSpec("trim", {})]))
    assert seen == [("job_queued", 2)]


def test_webhooks_have_a_lane_of_their_own_unless_left_to_another_worker() -> None:
    config = Config.from_env({}, webhook_host_concurrency=3)

    shared, apart = wiring.lanes(config, 3, 0), wiring.lanes(config, 3, 4)

    assert [(lane.name, lane.threads, lane.exclude) for lane in shared] == [
        ("jobs", 3, (WEBHOOK,))]
    assert [(lane.name, lane.threads, lane.funcs, lane.per_group) for lane in apart] == [
        ("jobs", 3, None, None), ("webhooks", 4, (WEBHOOK,), 3)]
