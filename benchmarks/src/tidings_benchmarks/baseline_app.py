"""W4's baseline: a minimal ASGI app (Starlette) answering the routes W4 times with the raw
statements of W2's baseline (:mod:`tidings_benchmarks.inbox_raw`), run by uvicorn with as many
processes as ``tidings serve`` gets::

    TIDINGS_DATABASE_URL=… TIDINGS_API_KEY=… uvicorn tidings_benchmarks.baseline_app:app_from_env \\
        --factory --workers 2

* ``GET /v1/users/{user}/notifications/unread-count`` — the capped count, ``{"count": n}``;
* ``GET /v1/users/{user}/notifications?limit=20`` — the 20 newest base rows joined to their
  events, ``{"items": [...]}`` (payloads decoded; no titles);
* ``POST /v1/events`` — one ``INSERT`` of the event row, skipped if its ``idempotency_key`` is
  taken (the seed's "pull submit", one row committed per message), ``202 {"status": …}``.

It checks the bearer key, as tidings does, and nothing else. On PostgreSQL it talks to the
database through an asyncio queue of psycopg ``AsyncConnection`` s (a pool of
:data:`POOL_SIZE` per process, tidings' own pool size; prepared statements, autocommit); on
SQLite and MariaDB, which have no async driver here, through one sync connection per thread of
Starlette's thread pool.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tidings_benchmarks.inbox_raw import PAGE_COLUMNS, PAGE_SQL, UNREAD_SQL
from tidings_benchmarks.raw import RawConnection, Row, parse, pg_params, style

POOL_SIZE = 5
_EVENT_INSERT = ("INSERT INTO events (type, actor, object, payload, recipients, exclude, "
                 "idempotency_key, body_hash, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, "
                 "%s, %s)")
EVENT_SQL = {
    "postgresql": _EVENT_INSERT + " ON CONFLICT (idempotency_scope, idempotency_key) DO NOTHING",
    "sqlite": _EVENT_INSERT + " ON CONFLICT (idempotency_scope, idempotency_key) DO NOTHING",
    "mysql": _EVENT_INSERT.replace("INSERT INTO", "INSERT IGNORE INTO", 1),
}
PAYLOAD = PAGE_COLUMNS.index("payload")


class AsyncPool:
    """psycopg async connections in a queue: what a pool does for this bench, nothing more."""

    def __init__(self, url: str, size: int) -> None:
        self._params = pg_params(parse(url)[1])
        self._size = size
        self._idle: asyncio.Queue[psycopg.AsyncConnection[Row]] = asyncio.Queue()

    async def open(self) -> None:
        for _ in range(self._size):
            self._idle.put_nowait(await psycopg.AsyncConnection.connect(**self._params,
                                                                        autocommit=True))

    async def fetch(self, statement: str, params: Sequence[Any]) -> list[Row]:
        conn = await self._idle.get()
        try:
            cur = await conn.execute(statement, params, prepare=True)
            return await cur.fetchall() if cur.description is not None else []
        finally:
            self._idle.put_nowait(conn)

    async def close(self) -> None:
        while not self._idle.empty():
            await self._idle.get_nowait().close()


class ThreadConnections:
    """One sync driver connection per thread of the thread pool (SQLite, MariaDB)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._local = threading.local()
        self._all: list[RawConnection] = []

    def _fetch(self, statement: str, params: Sequence[Any]) -> list[Row]:
        conn: RawConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = RawConnection(self._url, autocommit=True)
            self._all.append(conn)
        return conn.fetch(statement, params)

    async def open(self) -> None:
        pass

    async def fetch(self, statement: str, params: Sequence[Any]) -> list[Row]:
        return await run_in_threadpool(self._fetch, statement, params)

    async def close(self) -> None:
        for conn in self._all:
            conn.close()


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body, separators=(",", ":")), status,
                    media_type="application/json")


def create_app(url: str, api_key: str) -> Starlette:
    backend = parse(url)[0]
    db = AsyncPool(url, POOL_SIZE) if backend == "postgresql" else ThreadConnections(url)
    unread_sql, page_sql = style(backend, UNREAD_SQL), style(backend, PAGE_SQL)
    event_sql = style(backend, EVENT_SQL[backend])
    expected = f"Bearer {api_key}".encode()

    def denied(request: Request) -> Response | None:
        given = request.headers.get("authorization", "").encode()
        return None if hmac.compare_digest(given, expected) else _json({"error": "no"}, 401)

    async def unread_count(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        user = request.path_params["user"]
        rows = await db.fetch(unread_sql, (user, user))
        return _json({"count": rows[0][0]})

    async def first_page(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        rows = await db.fetch(page_sql, (request.path_params["user"],))
        items = [{**dict(zip(PAGE_COLUMNS, row, strict=True)),
                  "payload": json.loads(row[PAYLOAD])} for row in rows]
        return _json({"items": items})

    async def publish(request: Request) -> Response:
        if (refusal := denied(request)) is not None:
            return refusal
        body = await request.body()
        event = json.loads(body)
        await db.fetch(event_sql, (
            event["type"], event.get("actor"), event.get("object"),
            json.dumps(event.get("payload", {})), json.dumps(event.get("recipients", [])),
            json.dumps(event.get("exclude", [])), event.get("idempotency_key"),
            hashlib.sha256(body).hexdigest(), time.time_ns() // 1000))
        return _json({"status": "accepted"}, 202)

    async def ready(request: Request) -> Response:
        return _json({"status": "ok"})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await db.open()
        try:
            yield
        finally:
            await db.close()

    return Starlette(routes=[
        Route("/readyz", ready),
        Route("/v1/users/{user}/notifications/unread-count", unread_count),
        Route("/v1/users/{user}/notifications", first_page),
        Route("/v1/events", publish, methods=["POST"]),
    ], lifespan=lifespan)


def app_from_env() -> Starlette:
    """The factory uvicorn is given (``--factory``): settings from the environment."""
    return create_app(os.environ["TIDINGS_DATABASE_URL"], os.environ["TIDINGS_API_KEY"])
