"""One Redis Cluster master stopped (SIGSTOP) during a fan-out: the users on the other masters
get the event at once, the users on the stopped one get it once it is back (a job of their
own, retried with backoff), and nobody gets it twice (ESN: "if any cluster is down, we always
split the job"). The cluster is the test's own, with a short timeout, as it stops a node."""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

import pytest

from backends import require
from engines import TYPES
from redis_servers import ClusterProcesses, _have_redis_server, client_of
from stores import SqlStores
from tidings.clock import SystemClock
from tidings.config import Config
from tidings.engine import Tidings
from tidings.exceptions import StoreUnavailable

USERS = [f"reader{n:02d}" for n in range(30)]
PREFIX = "away:"


def test_a_stopped_master_holds_back_only_its_own_users(tmp_path: Path,
                                                         sqlite_stores: SqlStores) -> None:
    require("redis-server", _have_redis_server)
    cluster = ClusterProcesses(tmp_path / "cluster").start()
    url = sqlite_stores.clone()
    stopped = None
    try:
        config = Config(database_url=url, job_backoff_seconds=0.2,
                        hot_store_url=f"{cluster.url}?prefix={PREFIX}&timeout=0.3")
        with Tidings(config, types=TYPES, clock=SystemClock()) as t:
            event_id = int(t.publish({"type": "mention", "actor": "alice",
                                      "recipients": USERS}).id)
            client = client_of(cluster.url)

            def owner(key: str) -> int:
                return int(client.get_node_from_key(key).port)  # type: ignore[union-attr]

            homes = {u: owner(f"{PREFIX}{{u:{u}}}") for u in USERS}
            index = owner(f"{PREFIX}{{e:{event_id}}}:u")
            # a master holding some readers but not the event's own index of recipients
            port = next(p for p in cluster.ports if p != index and p in homes.values())
            stopped = next(n for n in cluster.nodes if n.port == port)
            away = [u for u in USERS if homes[u] == port]
            here = [u for u in USERS if homes[u] != port]
            assert stopped.process is not None
            stopped.process.send_signal(signal.SIGSTOP)

            started = time.monotonic()
            for _ in range(2):  # the first run meets the stopped master and gives the job back
                with contextlib.suppress(StoreUnavailable):
                    t.run_jobs()
            assert time.monotonic() - started < 15  # not held until the master returns
            for user in here:
                assert _listed(t, user) == [("mention", 1)], user

            stopped.process.send_signal(signal.SIGCONT)
            deadline = time.monotonic() + 20
            while t.queue.stats()["queued"] > 0:
                assert time.monotonic() < deadline, t.queue.stats()
                with contextlib.suppress(StoreUnavailable):
                    t.run_jobs()
                time.sleep(0.05)
            for user in USERS:  # once each: the rest delivered later, nothing twice
                assert _listed(t, user) == [("mention", 1)], user
                assert t.unread_count(user).count == 1
            assert away and t.queue.stats()["failed"] == 0
            client.close()
    finally:
        if stopped is not None and stopped.process is not None:
            stopped.process.send_signal(signal.SIGCONT)
        cluster.stop()
        sqlite_stores.drop(url)



def _listed(t: Tidings, user: str) -> list[tuple[str, int]]:
    return [(n.type, n.count) for n in t.notifications(user).items]


def test_a_stopped_master_holding_the_events_index_holds_back_only_its_own_users(
        tmp_path: Path, sqlite_stores: SqlStores) -> None:
    """The master stopped holds the events' own index of recipients (``{e:<id>}:u``): the
    users on the other masters still get them at once, the index is completed once the
    master is back, and a retraction made before the rest is delivered leaves no row."""
    require("redis-server", _have_redis_server)
    cluster = ClusterProcesses(tmp_path / "cluster").start()
    url = sqlite_stores.clone()
    stopped = None
    try:
        config = Config(database_url=url, job_backoff_seconds=0.2,
                        hot_store_url=f"{cluster.url}?prefix={PREFIX}&timeout=0.3")
        with Tidings(config, types=TYPES, clock=SystemClock()) as t:
            client = client_of(cluster.url)

            def owner(key: str) -> int:
                return int(client.get_node_from_key(key).port)  # type: ignore[union-attr]

            def publish() -> int:
                return int(t.publish({"type": "mention", "actor": "alice",
                                      "recipients": USERS}).id)

            kept = publish()
            port = owner(f"{PREFIX}{{e:{kept}}}:u")
            while True:  # a second event indexed on the same master, to retract later
                retracted = publish()
                if owner(f"{PREFIX}{{e:{retracted}}}:u") == port:
                    break
                t.retract(event_id=retracted)  # not fanned out yet: it reaches nobody
            homes = {u: owner(f"{PREFIX}{{u:{u}}}") for u in USERS}
            here = [u for u in USERS if homes[u] != port]
            stopped = next(n for n in cluster.nodes if n.port == port)
            assert stopped.process is not None and here
            stopped.process.send_signal(signal.SIGSTOP)

            started = time.monotonic()
            for _ in range(3):  # the first run meets the stopped master and gives the job back
                with contextlib.suppress(StoreUnavailable):
                    t.run_jobs()
            assert time.monotonic() - started < 15  # not held until the master returns
            for user in here:
                assert _listed(t, user) == [("mention", 1)] * 2, user
            # a retraction needs the index of the events' holders: refused while it is away,
            # with nothing done (the caller tries again), never half done
            with pytest.raises(StoreUnavailable):
                t.retract(event_id=retracted)
            assert _listed(t, here[0]) == [("mention", 1)] * 2

            stopped.process.send_signal(signal.SIGCONT)
            deadline = time.monotonic() + 20
            while True:  # before the users held back are delivered and the index completed
                try:
                    t.retract(event_id=retracted)
                    break
                except StoreUnavailable:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            while t.queue.stats()["queued"] > 0:
                assert time.monotonic() < deadline, t.queue.stats()
                with contextlib.suppress(StoreUnavailable):
                    t.run_jobs()
                time.sleep(0.05)
            for user in USERS:  # the kept event once each, nothing of the retracted one
                assert _listed(t, user) == [("mention", 1)], user
                assert t.unread_count(user).count == 1
            holders = client.smembers(f"{PREFIX}{{e:{kept}}}:u")
            assert sorted(h.decode() for h in holders) == USERS
            assert not client.exists(f"{PREFIX}{{e:{retracted}}}:u")
            assert t.queue.stats()["failed"] == 0
            client.close()
    finally:
        if stopped is not None and stopped.process is not None:
            stopped.process.send_signal(signal.SIGCONT)
        cluster.stop()
        sqlite_stores.drop(url)
