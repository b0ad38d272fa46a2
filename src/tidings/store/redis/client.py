"""A Redis connection from a URL, its Lua scripts, and outages as ``StoreUnavailable``.

``redis://[:password@]host:port/db`` is one server; ``redis+cluster://[:password@]host:port
[,host:port…]`` a Redis Cluster found through any of the nodes named. Options in the query
string: ``prefix`` (the key prefix, default ``tidings:``), ``timeout`` (seconds a command may
take, and a connection may take to open, default 2), ``retries`` (how often a command that met
a dropped connection is sent again, default 1), ``tls=1`` (``rediss``). Scripts are loaded with
SCRIPT LOAD and run with EVALSHA; a server that lost its script cache (a restart, a failover)
gets them again.

A server that hangs costs one ``timeout`` per command, never more: a command that timed out is
not sent again to a single server (on a cluster, redis-py sends it ``retries`` times more once
it has read the slot map again), and a server (cluster node) that timed out is *away*
(:mod:`.away`): its commands fail at once for ``timeout`` seconds, then one tries it again.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis
from redis import exceptions as rex
from redis.backoff import ExponentialBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot
from redis.retry import Retry

from tidings.exceptions import ConfigError, HotStoreEmptied, StoreUnavailable
from tidings.store.redis.away import Away

SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")
OUTAGES: tuple[type[BaseException], ...] = (
    rex.ConnectionError, rex.TimeoutError, rex.ClusterError, rex.RedisClusterException,
    rex.ReadOnlyError, rex.TryAgainError, OSError)
# The scripts by the port they serve (their folders under lua/), each named by its file.
SCRIPT_FOLDERS = {
    "inbox": ("deliver", "insert", "demote", "bundle_base", "writers", "remove", "trim", "oldest",
              "page", "view", "rows", "groups", "members", "count", "badge", "match", "changed",
              "flags", "triaged"),
    "markers": ("mark", "marker", "position"),
    "timeline": ("tl_push", "tl_cap", "tl_floor", "tl_head"),
}
# Scripts that take many users' key prefixes (KEYS) in one call: the users of one node, each
# user's keys in that user's own slot (Redis 7's allow-cross-slot-keys).
MANY_USERS = {"deliver": "#!lua flags=allow-cross-slot-keys\n",
              "tl_push": "#!lua flags=allow-cross-slot-keys\n",
              "writers": "#!lua flags=no-writes,allow-cross-slot-keys\n"}
USERS_A_CALL = 256  # users in one call of a many-user script
# scripts small enough to go without common.lua (it costs each call ~3 µs)
BARE = {"badge", "tl_head"}
# Every script first checks its slot's ready mark (KEYS[2], see Redis.ready_key): an emptied
# or replaced Redis has none, so no read answers with rows missing and no write lands in a
# store the rebuild is about to refill. A call without KEYS[2] (the rebuild's) is not checked.
EMPTIED = "EMPTIED"
GUARD = (f"if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 0 then "
         f"return redis.error_reply('{EMPTIED} no ready mark') end\n")


# (script name, a user's key prefix or a tuple of them, args), or ("", command, args)
Call = tuple[str, str | tuple[str, ...], Sequence[Any]]


@contextlib.contextmanager
def guard(what: str) -> Iterator[None]:
    """Turn a Redis outage into :class:`StoreUnavailable` (503 in the API)."""
    try:
        yield
    except OUTAGES as exc:
        raise unavailable(what, exc) from exc


def unavailable(what: str, exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(f"the Redis hot store is unavailable ({what}): "
                            f"{type(exc).__name__}: {exc}")


def emptied(exc: BaseException) -> bool:
    """Whether a script refused because its slot has no ready mark (:data:`GUARD`)."""
    return isinstance(exc, rex.ResponseError) and str(exc).startswith(EMPTIED)


def lost() -> HotStoreEmptied:
    return HotStoreEmptied(
        "the Redis hot store lost its data (emptied, restarted without persistence or "
        "replaced): it answers again once `tidings rebuild-hot-store` has refilled it")


@functools.lru_cache(maxsize=1)
def slot_tags() -> tuple[str, ...]:
    """A short hash tag for each cluster slot: the ready mark of slot s is under tag s."""
    tags: list[str | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
    left, n = REDIS_CLUSTER_HASH_SLOTS, 0
    while left:
        tag = f"r:{n:x}"
        slot = key_slot(tag.encode())
        if tags[slot] is None:
            tags[slot] = tag
            left -= 1
        n += 1
    return tuple(t for t in tags if t is not None)


@dataclass(frozen=True)
class Script:
    """One Lua script: the shared prelude and its own body, known by its SHA1."""

    name: str
    source: str
    sha: str


def _load_scripts() -> dict[str, Script]:
    folder = resources.files("tidings.store.redis") / "lua"
    prelude = (folder / "common.lua").read_text()
    return {name: _script(name, (folder / port / f"{name}.lua").read_text(), prelude)
            for port, names in SCRIPT_FOLDERS.items() for name in names}


def _script(name: str, own: str, prelude: str) -> Script:
    import hashlib

    body = own if name in BARE else prelude + "\n" + own
    source = MANY_USERS.get(name, "") + GUARD + body
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


class Redis:
    """A client (single server or cluster), the key prefix, and the scripts."""

    def __init__(self, url: str, *, check_ready: bool = True) -> None:
        self.url = url
        self._connect, self.cluster, self.prefix, timeout = client_factory(url)
        self.away = Away(cooldown=timeout)
        # False: scripts run without their ready mark's check (the rebuild's own client)
        self.check_ready = check_ready
        self._client: Any = None
        self._lock = threading.Lock()
        self.scripts = _load_scripts()
        # the types page views have met that bundle (a hint, RedisInbox.page_view)
        self.bundling: set[str] = set()

    @property
    def client(self) -> Any:
        """The client, made on first use: a cluster client asks the nodes for the slot map
        when made, and a store must open (and answer 503) while Redis is away."""
        if self._client is None:
            with self._lock, guard("connecting"):
                if self._client is None:
                    self._client = self._connect()
        return self._client

    def load_scripts(self, keys: Sequence[str] = ()) -> None:
        """SCRIPT LOAD every script: on the nodes serving ``keys`` (a cluster node that lost
        them), or on every primary; a node that is away is left alone (:mod:`.away`)."""
        with guard("loading scripts"):
            if not self.cluster or not keys:
                clients = ([self.client] if not self.cluster else
                           [n.redis_connection for n in self.client.get_primaries()
                            if n.name not in self.away.names()])
            else:
                nodes = {self.client.get_node_from_key(key) for key in keys}
                clients = [n.redis_connection for n in nodes]
            for client in clients:
                for script in self.scripts.values():
                    client.script_load(script.source)

    def ready_key(self, prefix: str) -> str:
        """The ready mark of the slot of ``prefix``: one key on a single server, one per slot
        on a cluster (a script may only read keys of its own slot)."""
        if not self.cluster:
            return f"{self.prefix}ready"
        return f"{self.prefix}{{{slot_tags()[key_slot(prefix.encode())]}}}ready"

    def ready_keys(self) -> list[str]:
        """Every ready mark."""
        if not self.cluster:
            return [f"{self.prefix}ready"]
        return [f"{self.prefix}{{{tag}}}ready" for tag in slot_tags()]

    def _keys(self, prefix: str) -> tuple[Any, ...]:
        return (2, prefix, self.ready_key(prefix)) if self.check_ready else (1, prefix)

    def run(self, name: str, prefix: str, args: Sequence[Any]) -> Any:
        """Run one script on the slot of ``prefix`` (a user's key prefix)."""
        sha = self.scripts[name].sha
        keys = self._keys(prefix)
        server = self.server_of(prefix) if self.away else None
        if server is not None:
            self.away.check(server)
        try:  # guard() inline: this is every read's path
            try:
                found = self.client.evalsha(sha, *keys, *args)
            except rex.NoScriptError:
                self.load_scripts([prefix])
                found = self.client.evalsha(sha, *keys, *args)
        except OUTAGES as exc:
            if isinstance(exc, rex.TimeoutError):
                self.away.timed_out(self.server_of(prefix) if server is None else server)
            raise unavailable(name, exc) from exc
        except rex.ResponseError as exc:
            if emptied(exc):
                raise lost() from exc
            raise
        if server is not None:
            self.away.answered(server)
        return found

    @contextlib.contextmanager
    def guarded(self, what: str, key: str) -> Iterator[None]:
        """:func:`guard` for a plain command on ``key``, which also fails at once while the
        key's server is away, and marks it away when the command times out."""
        server = self.server_of(key) if self.away or self.cluster else ""
        self.away.check(server)
        try:
            yield
        except OUTAGES as exc:
            if isinstance(exc, rex.TimeoutError):
                self.away.timed_out(server)
            raise unavailable(what, exc) from exc
        self.away.answered(server)

    def server_of(self, prefix: str) -> str:
        """The name of the server holding ``prefix``'s slot (``""``: the one server)."""
        if not self.cluster:
            return ""
        with guard("slots"):
            name: str = self.client.get_node_from_key(prefix).name
        return name

    def unreachable(self, users: Sequence[str], prefix: Callable[[str], str]) -> set[str]:
        """Those of ``users`` (their key prefix: ``prefix(user)``) whose server is away
        (:mod:`.away`); every delivery asks, so nothing is computed while all answer."""
        if not self.away:
            return set()
        away = self.away.names()
        return {user for user in users if self.server_of(prefix(user)) in away}

    def by_node(self, prefixes: Sequence[str]) -> list[list[int]]:
        """The positions of ``prefixes`` (users' key prefixes) grouped by the node serving
        them, at most :data:`USERS_A_CALL` a group: the calls of a many-user script."""
        groups: dict[str, list[int]] = {}
        with guard("slots"):
            for index, prefix in enumerate(prefixes):
                node = self.client.get_node_from_key(prefix).name if self.cluster else ""
                groups.setdefault(node, []).append(index)
        return [members[start:start + USERS_A_CALL] for members in groups.values()
                for start in range(0, len(members), USERS_A_CALL)]

    def pipeline(self, calls: Sequence[Call], what: str = "pipeline") -> list[Any]:
        """Run script calls ``(name, prefix, args)`` and plain commands ``("", command,
        args)`` in pipelines, one per server; a many-user script names a tuple of prefixes
        (of one node, :meth:`by_node`). Every call is idempotent, so a NOSCRIPT answer
        (a server that lost its scripts) or a moved slot runs the whole batch again."""
        if not calls:
            return []
        if len(calls) == 1 and not calls[0][0]:  # one command: no pipeline needed
            _, command, args = calls[0]
            with self.guarded(what, str(args[0]) if args else ""):
                return [self.client.execute_command(command, *args)]
        with guard(what):
            for attempt in range(3):
                results = self._execute(calls)
                errors = [r for r in results if isinstance(r, Exception)]
                unloaded = [_key_of(call) for call, r in zip(calls, results, strict=True)
                            if isinstance(r, rex.NoScriptError)]
                if attempt < 2 and unloaded:
                    self.load_scripts(unloaded if self.cluster else ())
                    continue
                if attempt < 2 and any(isinstance(e, (rex.AskError, rex.TryAgainError))
                                       for e in errors):
                    self.client.nodes_manager.initialize()  # the slots moved: ask again
                    continue
                if any(emptied(e) for e in errors):
                    raise lost()
                if errors:
                    raise errors[0]
                return results
        raise AssertionError("unreachable")

    def _execute(self, calls: Sequence[Call]) -> list[Any]:
        # A cluster pipeline refuses EVALSHA: group the calls by the node serving their slot
        # and send each group through that node's own connection.
        groups: dict[str, tuple[Any, list[int]]] = {}
        for index, call in enumerate(calls):
            if self.cluster:
                node = self.client.get_node_from_key(_key_of(call))
                client, members = groups.setdefault(node.name, (node.redis_connection, []))
            else:
                client, members = groups.setdefault("", (self.client, []))
            members.append(index)
        results: list[Any] = [None] * len(calls)
        for server, (client, members) in groups.items():
            self.away.check(server)
            pipe = client.pipeline(transaction=False)
            for index in members:
                name, first, args = calls[index]
                if isinstance(first, tuple):  # common.lua's users_of
                    pipe.evalsha(self.scripts[name].sha, *self._keys(first[0]), len(first),
                                 *first, *args)
                elif name:
                    pipe.evalsha(self.scripts[name].sha, *self._keys(first), *args)
                else:
                    pipe.execute_command(first, *args)
            try:
                answers = pipe.execute(raise_on_error=False)
            except rex.TimeoutError:
                self.away.timed_out(server)
                raise
            self.away.answered(server)
            for index, result in zip(members, answers, strict=True):
                results[index] = result
        return results

    def ping(self) -> None:
        if not self.cluster:
            self.away.check("")
        with guard("ping"):
            try:
                self.client.ping()
            except rex.TimeoutError:
                if not self.cluster:
                    self.away.timed_out("")
                raise
        if not self.cluster:
            self.away.answered("")

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()


def _key_of(call: Call) -> str:
    """The key whose slot a call runs on."""
    name, first, args = call
    return (first if isinstance(first, str) else first[0]) if name else str(args[0])


def client_factory(url: str) -> tuple[Callable[[], Any], bool, str, float]:
    """(make the client, is it a cluster, key prefix, timeout) for a ``redis://`` or
    ``redis+cluster://`` URL; the URL is checked at once, nothing is contacted yet."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ConfigError(f"TIDINGS_HOT_STORE_URL: expected redis:// or redis+cluster://, "
                          f"got {parts.scheme or url!r}")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    prefix = query.pop("prefix", "tidings:")
    if re.search(r"[{}\s]", prefix):
        raise ConfigError("TIDINGS_HOT_STORE_URL: the prefix may not hold braces or spaces")
    try:
        timeout = float(query.pop("timeout", "2"))
        retries = int(query.pop("retries", "1"))
    except ValueError:
        raise ConfigError("TIDINGS_HOT_STORE_URL: timeout and retries must be numbers"
                          ) from None
    if timeout <= 0 or retries < 0:
        raise ConfigError("TIDINGS_HOT_STORE_URL: timeout must be positive and retries "
                          "not negative")
    tls = parts.scheme.startswith("rediss") or query.pop("tls", "0") in ("1", "true")
    if query:
        raise ConfigError(f"TIDINGS_HOT_STORE_URL: unknown option {sorted(query)[0]!r}")
    netloc = parts.netloc.rpartition("@")
    username = unquote(netloc[0].partition(":")[0]) or None if netloc[0] else None
    password = unquote(netloc[0].partition(":")[2]) or None if netloc[0] else None
    hosts = []
    for host in netloc[2].split(","):
        name, _, port = host.rpartition(":") if ":" in host else (host, "", "6379")
        try:
            hosts.append((name or "127.0.0.1", int(port or 6379)))
        except ValueError:
            raise ConfigError(f"TIDINGS_HOT_STORE_URL: bad port in {host!r}") from None
    # redis-py's own default retries ten times with backoff, a timeout included: bounded here
    backoff = ExponentialBackoff(cap=0.1, base=0.01)
    common: dict[str, Any] = {
        "username": username, "password": password, "socket_timeout": timeout,
        "socket_connect_timeout": timeout, "ssl": tls, "decode_responses": True}
    if parts.scheme.endswith("+cluster"):
        nodes = [ClusterNode(h, p) for h, p in hosts]  # type: ignore[no-untyped-call]
        return (lambda: RedisCluster(startup_nodes=nodes, retry=Retry(backoff, retries),
                                     **common)), True, prefix, timeout
    if len(hosts) != 1:
        raise ConfigError("TIDINGS_HOT_STORE_URL: redis:// names one server; use "
                          "redis+cluster:// for several")
    db = parts.path.strip("/") or "0"
    if not db.isdigit():
        raise ConfigError(f"TIDINGS_HOT_STORE_URL: the database must be a number, got {db!r}")
    server, number = hosts[0]
    # a dropped connection is opened again; a timeout (a server that hangs) is not retried
    retry = Retry(backoff, retries, supported_errors=(rex.ConnectionError,))
    return (lambda: redis.Redis(host=server, port=number, db=int(db), retry=retry, **common)
            ), False, prefix, timeout
