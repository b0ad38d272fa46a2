"""``--json-logs``: one JSON object a line, keeping the traceback, the request id and the job id.

``tidings serve`` and ``tidings worker`` run as real processes on PostgreSQL, with a trigger
that makes the store fail (a 500 for a follow, a failed fan-out job); their standard error is
parsed line by line.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, text
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from engines import TYPES
from live import free_port
from stores import SqlStores
from tidings import logs
from tidings.api.middleware import RequestContext
from tidings.config import Config
from tidings.domain.events import Event
from tidings.engine import Tidings
from tidings.metrics import Metrics
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import job_failures

KEY = "log-test-key-0123456789"


def sabotage(url: str, table: str) -> None:
    """Every insert into ``table`` fails in the database with an unclassified error."""
    database = Database(url)
    with database.write() as conn:
        conn.execute(text(
            "CREATE FUNCTION sabotage() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION 'boom from the trigger' USING ERRCODE = 'XX000'; END $$"))
        conn.execute(text(f"CREATE TRIGGER sabotage BEFORE INSERT ON {table} "
                          "FOR EACH ROW EXECUTE FUNCTION sabotage()"))
    database.dispose()


@pytest.fixture
def pg_url(postgresql_stores: SqlStores) -> Iterator[str]:
    url = postgresql_stores.clone()
    with Tidings(Config(database_url=url), types=TYPES) as tidings:
        tidings.load_types()
    yield url
    postgresql_stores.drop(url)


def tidings_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tidings.cli", *args]


def environment(url: str) -> dict[str, str]:
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")}
    return {**clean, "TIDINGS_DATABASE_URL": url, "TIDINGS_API_KEY": KEY}


def stop(process: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """SIGTERM ``process``; its standard error's lines, each parsed as JSON (all must be)."""
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    lines = [line for line in err.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


def wait(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_a_500_logs_its_error_id_request_id_and_traceback(pg_url: str) -> None:
    sabotage(pg_url, "follows")
    port = free_port()
    server = subprocess.Popen(
        tidings_command("serve", "--json-logs", "--no-worker", "--port", str(port)),
        env=environment(pg_url), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait(lambda: httpx.get(base + "/healthz").status_code == 200)
        answer = httpx.put(base + "/v1/users/bob/follows/alice",
                           headers={"Authorization": f"Bearer {KEY}",
                                    "X-Request-ID": "req-from-the-caller"})
    finally:
        records = stop(server)
    assert answer.status_code == 500
    assert answer.headers["x-request-id"] == "req-from-the-caller"
    error_id = re.search(r"error id ([0-9a-f]{12})", answer.json()["error"]["message"])
    assert error_id, answer.text
    (logged,) = [r for r in records if r.get("error_id") == error_id[1]]
    assert logged["level"] == "ERROR" and logged["request_id"] == "req-from-the-caller"
    assert error_id[1] in logged["message"]
    assert "Traceback (most recent call last)" in logged["exc_info"]
    assert "boom from the trigger" in logged["exc_info"]
    access = [r for r in records if r["logger"] == "tidings.http"]
    assert [r["request_id"] for r in access if "follows" in r["message"]] == [
        "req-from-the-caller"]


def test_a_failed_job_logs_its_job_id_and_traceback(pg_url: str) -> None:
    with Tidings(Config(database_url=pg_url), types=TYPES) as tidings:
        tidings.load_types()
        tidings.publish(Event("mention", actor="alice", recipients=["bob"]))
        sabotage(pg_url, "notifications")
        worker = subprocess.Popen(tidings_command("worker", "--json-logs"),
                                  env=environment(pg_url), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        try:
            def failed() -> bool:
                with tidings.store.db.read() as conn:
                    count = conn.execute(select(func.count()).select_from(job_failures))
                    return bool(count.scalar())

            wait(failed)
        finally:
            records = stop(worker)
        failure = tidings.queue.failures()[-1]
    failing = [r for r in records if r.get("job_id") == failure.job_id]
    assert failing, records
    (line,) = [r for r in failing if r["level"] == "WARNING" and "failed" in r["message"]][:1]
    assert "Traceback (most recent call last)" in line["exc_info"]
    assert "boom from the trigger" in line["exc_info"]
    started = [r for r in records if r["message"].startswith("worker started")]
    assert started and "job_id" not in started[0]  # outside a job, no job id


def test_every_line_of_a_request_carries_its_id() -> None:
    """Lines logged anywhere while a request runs — a library, a thread of the pool — carry
    its request id, not only the lines that name it."""
    out = io.StringIO()
    handler = logs.handler(True, out)
    library = logging.getLogger("some.library")
    library.addHandler(handler)
    library.setLevel(logging.INFO)

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        library.info("in the event loop")
        await run_in_threadpool(library.info, "in a thread")
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=RequestContext(inner, Metrics()))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            await client.get("/x", headers={"X-Request-ID": "abc"})
            return await client.get("/y")

    try:
        minted = asyncio.run(call()).headers["x-request-id"]
    finally:
        library.removeHandler(handler)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["message"], r.get("request_id")) for r in lines] == [
        ("in the event loop", "abc"), ("in a thread", "abc"),
        ("in the event loop", minted), ("in a thread", minted)]
