"""Redis for the tests: the local server (a fresh key prefix per test on a database kept for
tests), Redis Cluster started by the session itself, and single servers a test may kill.

* ``redis_server`` — the URL of the local server, ``redis://127.0.0.1:6379/15`` unless
  ``TIDINGS_TEST_REDIS_URL`` names another; a test gets its own ``prefix`` and its keys are
  deleted by prefix afterwards (nothing else on the server is touched).
* ``redis_cluster`` — a 3-master Redis Cluster on free loopback ports, started once per
  session (``redis-server --cluster-enabled yes`` three times, then ``redis-cli --cluster
  create``) in a temporary folder, and shut down at the end.
* :class:`RedisProcess` — one ``redis-server`` of the test's own (which it may SIGKILL and
  start again on the same port and files).

A missing server or ``redis-server`` binary skips the tests, or fails them with ``CI=true``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from backends import require

REDIS_ENV = "TIDINGS_TEST_REDIS_URL"
REDIS_DEFAULT = "redis://127.0.0.1:6379/15"
HOT_BACKENDS = ["redis", "cluster"]


def redis_server_url() -> str:
    return os.environ.get(REDIS_ENV) or REDIS_DEFAULT


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def spare_ports(count: int, *, bus: bool = False) -> list[int]:
    """Free loopback ports (and, for cluster nodes, their bus port + 10000)."""
    found: list[int] = []
    rng = secrets.SystemRandom()
    while len(found) < count:
        port = rng.randrange(20000, 30000)
        if port not in found and _port_free(port) and (not bus or _port_free(port + 10000)):
            found.append(port)
    return found


def _wait(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if callable(check) and check():
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up in {timeout} s")
        time.sleep(0.05)


class RedisProcess:
    """One ``redis-server`` on a spare loopback port with its files in ``folder``."""

    def __init__(self, folder: Path, port: int | None = None, *extra: str) -> None:
        self.folder = folder
        self.port = port or spare_ports(1)[0]
        self.extra = extra
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisProcess:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.folder), "--save", "", "--protected-mode", "no", *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_timeout=1)
        _wait(lambda: client.ping(), 10, f"redis-server on port {self.port}")
        client.close()
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown, no save."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None


class ClusterProcesses:
    """A 3-master Redis Cluster on loopback ports."""

    def __init__(self, folder: Path) -> None:
        self.ports = spare_ports(3, bus=True)
        self.nodes = [RedisProcess(folder / str(p), p, "--cluster-enabled", "yes",
                                   "--cluster-config-file", "nodes.conf",
                                   "--cluster-node-timeout", "2000", "--appendonly", "no")
                      for p in self.ports]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def start(self) -> ClusterProcesses:
        for node in self.nodes:
            node.start()
        subprocess.run(
            ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)

        def ready() -> bool:
            for port in self.ports:
                client = redis.Redis(port=port, decode_responses=True)
                try:
                    if client.cluster("info").get("cluster_state") != "ok":
                        return False
                finally:
                    client.close()
            return True

        _wait(ready, 30, "the Redis Cluster")
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _have_redis_server() -> None:
    for binary in ("redis-server", "redis-cli"):
        if shutil.which(binary) is None:
            raise RuntimeError(f"{binary} is not installed (apt-get install redis-server)")


@pytest.fixture(scope="session")
def redis_server() -> str:
    """The local Redis server's URL (a database kept for tests)."""
    url = redis_server_url()
    require("Redis", lambda: redis.Redis.from_url(url, socket_timeout=2).ping(), where=url,
            env=REDIS_ENV)
    return url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterProcesses]:
    """A 3-master Redis Cluster of the session's own."""
    require("redis-server", _have_redis_server)
    cluster = ClusterProcesses(tmp_path_factory.mktemp("redis-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def client_of(url: str) -> RedisCluster | redis.Redis:
    """A client of a ``redis://`` URL, or of every node a ``redis+cluster://`` URL names."""
    if url.startswith("redis+cluster://"):
        hosts = url.split("://", 1)[1].split("?")[0].split(",")
        return RedisCluster(startup_nodes=[
            ClusterNode(h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1]))  # type: ignore[no-untyped-call]
            for h in hosts])
    return redis.Redis.from_url(url)


# Deletes the node's keys matching ARGV[1], in the node itself: a hot store keeps a ready mark
# per slot, so a test's key space on a cluster is some 16,000 keys.
_DELETE_MATCHING = """#!lua flags=allow-cross-slot-keys
local cursor, gone = "0", 0
repeat
  local found = redis.call("SCAN", cursor, "MATCH", ARGV[1], "COUNT", 5000)
  cursor = found[1]
  for _, key in ipairs(found[2]) do redis.call("UNLINK", key); gone = gone + 1 end
until cursor == "0"
return gone
"""


def delete_prefix(url: str, prefix: str) -> None:
    """Delete every key under ``prefix`` (on every node of a cluster)."""
    client = client_of(url)
    if isinstance(client, RedisCluster):
        for node in client.get_primaries():
            client.get_redis_connection(node).eval(_DELETE_MATCHING, 0, f"{prefix}*")
    else:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start:start + 1000])
    client.close()


@contextlib.contextmanager
def hot_url_of(kind: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A hot store URL on ``kind`` (redis | cluster) with a fresh prefix, cleaned after."""
    if kind == "cluster":
        server = request.getfixturevalue("redis_cluster").url
    else:
        server = request.getfixturevalue("redis_server")
    prefix = f"t{secrets.token_hex(5)}:"
    try:
        yield f"{server}?prefix={prefix}"
    finally:
        delete_prefix(server, prefix)


@pytest.fixture(params=HOT_BACKENDS)
def hot_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """``TIDINGS_HOT_STORE_URL`` of a clean key space, on one server and on the cluster."""
    with hot_url_of(request.param, request) as url:
        yield url
