"""OpenTelemetry traces (``tidings[otel]``, ``tidings.tracing``) with the SDK's in-memory
exporter: one trace from an HTTP request (its ``traceparent`` continued) through the publish,
the fan-out job, each channel's job and the mail and webhook sent, carried in the jobs' args
from the API's engine to a worker's (another engine on the same database, its jobs run on a
thread of their own: nothing but the stored job links them); per event when a worker fans
several out in one unit; and nothing traced, nothing broken, with the switch off.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from sqlalchemy import select

from hooks import LOOPBACK, SECRET, Receiver
from live import free_port
from servers import SERVER_KEY, TOKEN_SECRET, start, wait_for
from smtp import SmtpSink
from tidings import tracing
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.exceptions import ConfigError
from tidings.jobs.model import JobSpec
from tidings.store.sql.schema import jobs

TYPES = (EventType("mention", channels=("web", "email", "webhook"), audience=("recipients",),
                   templates=Templates(title="{{ actor }} mentioned you")),)
TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
INCOMING = f"00-{TRACE_ID:032x}-b7ad6b7169203331-01"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    stores = request.getfixturevalue(f"{request.param}_stores")
    clone: str = stores.clone()
    yield clone
    stores.drop(clone)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tidings traces into memory for the test (its own provider, not the global one)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    yield exporter
    tracing.use(None)
    provider.shutdown()


def settings(url: str, sink: SmtpSink) -> dict[str, Any]:
    return {"smtp_url": sink.url, "public_url": "https://wiki.example.org",
            "webhook_allow": LOOPBACK, "webhook_secret": SECRET}


def worker_engine(url: str, sink: SmtpSink) -> Tidings:
    """The worker's engine: another engine (pool, catalog) over the same database."""
    return Tidings(Config(database_url=url, token_secret=TOKEN_SECRET, **settings(url, sink)),
                   types=TYPES)


def run_jobs_elsewhere(t: Tidings) -> None:
    """Run the queue on a new thread, which inherits no trace context from this one."""
    thread = threading.Thread(target=t.run_jobs)
    thread.start()
    thread.join(60)


def recipient(t: Tidings, name: str, hook: str) -> None:
    t.set_preferences(name, {"email": {"address": f"{name}@example.org",
                                       "frequency": "immediate"}, "webhook": {"url": hook}})


def named(found: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_one_trace_from_the_request_through_fanout_to_the_mail_and_the_webhook(
        url: str, sink: SmtpSink, spans: InMemorySpanExporter) -> None:
    with contextlib.ExitStack() as stack, Receiver([]) as receiver:
        api = start(stack, url, types=TYPES, run_worker=False, config=settings(url, sink))
        worker = stack.enter_context(worker_engine(url, sink))
        recipient(worker, "bob", receiver.url)
        assert httpx.get(f"{api.base_url}/healthz").status_code == 200  # a probe: untraced
        answer = httpx.post(f"{api.base_url}/v1/events", headers={
            "Authorization": f"Bearer {SERVER_KEY}", "traceparent": INCOMING},
            json={"type": "mention", "actor": "amy", "recipients": ["bob"]})
        assert answer.status_code == 202, answer.text
        with api.tidings.store.db.read() as conn:  # the context rides in the stored job
            (args,) = conn.execute(select(jobs.c.args).where(jobs.c.func == "fanout")).scalars()
        assert f"{TRACE_ID:032x}" in str(args)
        run_jobs_elsewhere(worker)
        assert len(sink.wait_for(1)) == 1
        assert wait_for(lambda: len(receiver.requests) == 1)

    found = list(spans.get_finished_spans())
    assert {s.context.trace_id for s in found} == {TRACE_ID}  # every span, one trace
    (server,) = [s for s in found if s.kind is SpanKind.SERVER]
    assert server.parent is not None and server.parent.span_id == 0xB7AD6B7169203331
    assert parent_of(server) not in {parent_of(s) for s in found if s is not server}
    assert not [s for s in found if s.name.endswith((" http send", " http receive"))]
    (publish,) = named(found, "tidings.publish")
    assert parent_of(publish) == server.context.span_id
    # the unit of the requests' events, where it is one in a thread (not PostgreSQL's step)
    assert {parent_of(s) for s in named(found, "tidings.publish.group")} <= {
        publish.context.span_id}
    (fanout,) = named(found, "tidings.job fanout")
    assert parent_of(fanout) == publish.context.span_id
    assert fanout.kind is SpanKind.CONSUMER and fanout.attributes is not None
    assert fanout.attributes["tidings.job.func"] == "fanout"
    assert fanout.attributes["tidings.job.attempt"] == 1
    for func in ("email_send", "webhook"):
        (job,) = named(found, f"tidings.job {func}")
        assert parent_of(job) == fanout.context.span_id
        (send,) = named(found, f"tidings.send {func}")
        assert parent_of(send) == job.context.span_id
    # the SQL of the request and of the jobs, within their spans; none of the idle polls
    sql = [s for s in found if s.kind is SpanKind.CLIENT]
    by_id = {s.context.span_id: s.name for s in found}
    assert {by_id[parent_of(s) or 0] for s in sql} >= {
        "tidings.job fanout", "tidings.job email_send", "tidings.job webhook"}


def test_a_unit_of_several_fanouts_keeps_each_event_in_its_own_trace(
        url: str, sink: SmtpSink, spans: InMemorySpanExporter) -> None:
    with Receiver([]) as receiver, worker_engine(url, sink) as t:
        for name in ("bob", "carol"):
            recipient(t, name, receiver.url)
        t.publish(Event("mention", actor="amy", recipients=["bob"]))
        t.publish_many([Event("mention", actor="amy", recipients=["carol"]),
                        Event("mention", actor="dan", recipients=["carol"])])
        run_jobs_elsewhere(t)
        assert len(sink.wait_for(3)) == 3

    found = list(spans.get_finished_spans())
    publishes = named(found, "tidings.publish")
    assert len(publishes) == 2 and len({s.context.trace_id for s in publishes}) == 2
    for publish, events in zip(publishes, (1, 2), strict=True):
        assert publish.attributes is not None
        assert publish.attributes["tidings.event.count"] == events
        trace = [s for s in found if s.context.trace_id == publish.context.trace_id]
        fanouts = named(trace, "tidings.job fanout")
        assert len(fanouts) == events
        assert {parent_of(s) for s in fanouts} == {publish.context.span_id}
        mails = named(trace, "tidings.job email_send")
        assert len(mails) == events
        assert {parent_of(s) for s in mails} == {s.context.span_id for s in fanouts}
        assert len(named(trace, "tidings.send email_send")) == events


def test_a_worker_process_set_up_by_the_otel_variables_continues_the_trace(
        url: str, spans: InMemorySpanExporter, tmp_path: Path) -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("TIDINGS_", "OTEL_"))},
           "PYTHONPATH": src, "TIDINGS_DATABASE_URL": url,
           "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "tidings-test-worker"}
    out = tmp_path / "spans.json"
    with Tidings(Config(database_url=url), types=TYPES) as t, out.open("wb") as sink:
        t.publish(Event("mention", actor="amy", recipients=["bob"]))
        worker = subprocess.Popen([sys.executable, "-m", "tidings.cli", "worker", "--poll",
                                   "0.05"], env=env, stdout=sink, stderr=subprocess.DEVNULL)
        try:
            assert wait_for(lambda: t.unread_count("bob").count == 1, timeout=60)
        finally:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
    (publish,) = named(list(spans.get_finished_spans()), "tidings.publish")
    exported = console_spans(out)
    (fanout,) = [s for s in exported if s["name"] == "tidings.job fanout"]
    assert fanout["context"]["trace_id"] == f"0x{publish.context.trace_id:032x}"
    assert fanout["parent_id"] == f"0x{publish.context.span_id:016x}"
    assert fanout["resource"]["attributes"]["service.name"] == "tidings-test-worker"


def test_tidings_serve_set_up_by_the_otel_variables_continues_an_incoming_trace(
        url: str, tmp_path: Path) -> None:
    with Tidings(Config(database_url=url), types=TYPES) as t:
        t.load_types()  # stored, for the server to read
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("TIDINGS_", "OTEL_"))},
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
           "TIDINGS_DATABASE_URL": url, "TIDINGS_API_KEY": SERVER_KEY,
           "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "tidings-test-api"}
    out = tmp_path / "spans.json"
    with out.open("wb") as sink:
        server = subprocess.Popen([sys.executable, "-m", "tidings.cli", "serve", "--no-worker",
                                   "--port", str(port)], env=env, stdout=sink,
                                  stderr=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}"
            assert wait_for(lambda: _ready(base), timeout=60)
            answer = httpx.post(f"{base}/v1/events", headers={
                "Authorization": f"Bearer {SERVER_KEY}", "traceparent": INCOMING},
                json={"type": "mention", "actor": "amy", "recipients": ["bob"]})
            assert answer.status_code == 202, answer.text
        finally:
            server.send_signal(signal.SIGTERM)  # uvicorn ends by raising it again
            assert server.wait(timeout=30) in (0, -signal.SIGTERM)
    exported = console_spans(out)
    (request,) = [s for s in exported if s["kind"] == "SpanKind.SERVER"]
    assert request["context"]["trace_id"] == f"0x{TRACE_ID:032x}"
    assert request["parent_id"] == "0xb7ad6b7169203331"
    (publish,) = [s for s in exported if s["name"] == "tidings.publish"]
    assert publish["parent_id"] == request["context"]["span_id"]
    assert publish["resource"]["attributes"]["service.name"] == "tidings-test-api"


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz").status_code == 200
    except httpx.TransportError:
        return False


def console_spans(path: Path) -> list[dict[str, Any]]:
    """The spans the console exporter wrote: one JSON object after another."""
    text, decoder, exported = path.read_text(), json.JSONDecoder(), []
    at = text.find("{")
    while at >= 0:
        found, end = decoder.raw_decode(text, at)
        exported.append(found)
        at = text.find("{", end)
    return exported


def test_off_nothing_is_traced_and_everything_is_delivered(
        url: str, sink: SmtpSink, spans: InMemorySpanExporter,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tracing, "SWITCH", False)  # as if opentelemetry were not installed
    assert tracing.tracer() is None and tracing.carrier() is None
    assert tracing.configure({"OTEL_TRACES_EXPORTER": "console"}) is False
    with contextlib.ExitStack() as stack, Receiver([]) as receiver:
        api = start(stack, url, types=TYPES, run_worker=False, config=settings(url, sink))
        worker = stack.enter_context(worker_engine(url, sink))
        recipient(worker, "bob", receiver.url)
        answer = httpx.post(f"{api.base_url}/v1/events", headers={
            "Authorization": f"Bearer {SERVER_KEY}", "traceparent": INCOMING},
            json={"type": "mention", "actor": "amy", "recipients": ["bob"]})
        assert answer.status_code == 202, answer.text
        with api.tidings.store.db.read() as conn:
            (args,) = conn.execute(select(jobs.c.args).where(jobs.c.func == "fanout")).scalars()
        assert "traceparent" not in str(args)
        run_jobs_elsewhere(worker)
        assert len(sink.wait_for(1)) == 1
        assert wait_for(lambda: len(receiver.requests) == 1)
    assert spans.get_finished_spans() == ()


def test_without_a_provider_jobs_carry_nothing() -> None:
    tracing.use(None)
    # no test sets the global provider in-process (configure() runs in subprocesses only)
    assert tracing.provider() is None
    spec = JobSpec("fanout", {"event_id": 1})
    assert spec.args == {"event_id": 1}
    assert tracing.carrier() is None and tracing.span("x").__enter__() is None


def test_off_tidings_imports_nothing_of_opentelemetry(tmp_path: Path) -> None:
    """Installed but with no provider set: publishing and running the jobs import no part of
    it, building the app neither the SDK nor an instrumentation (FastAPI itself imports the
    API): tracing off costs nothing at start-up."""
    probe = (
        "import sys\n"
        "from tidings.config import Config\n"
        "from tidings.domain.types import EventType\n"
        "from tidings.engine import Tidings\n"
        f"t = Tidings(Config(database_url='sqlite:///{tmp_path}/t.db'),\n"
        "            types=[EventType('mention', audience=('recipients',))])\n"
        "t.migrate()\n"
        "t.publish({'type': 'mention', 'actor': 'amy', 'recipients': ['bob']})\n"
        "assert t.run_jobs() >= 1 and t.unread_count('bob').count == 1\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
        "from tidings.api.app import create_app\n"
        "create_app(t, api_keys=('k',), token_secret=None)\n"
        "print(sorted(m for m in sys.modules if m.startswith(\n"
        "    ('opentelemetry.sdk', 'opentelemetry.instrumentation'))))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIDINGS_", "OTEL_"))}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "[]"]


def test_an_exporter_not_installed_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OTEL_TRACES_EXPORTER names 'nonesuch'"):
        tracing.configure({"OTEL_TRACES_EXPORTER": "nonesuch"})


@pytest.mark.parametrize(("env", "wanted"), [
    ({}, False),
    ({"OTEL_SERVICE_NAME": "api"}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
    ({"OTEL_TRACES_EXPORTER": "console"}, True),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
    ({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, False),
])
def test_the_otel_variables_that_turn_traces_on(env: dict[str, str], wanted: bool) -> None:
    assert tracing.wanted(env) is wanted
