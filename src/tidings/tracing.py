"""OpenTelemetry traces: on when opentelemetry is installed and a tracer provider is set.

Off and free otherwise: nothing of opentelemetry is imported here until a provider is found,
and every helper is a no-op (a dictionary look-up) while none is. The provider is the
application's (``opentelemetry.trace.set_tracer_provider``), the one ``tidings serve`` and
``tidings worker`` build from the standard ``OTEL_*`` variables (:func:`configure`), or one
given to :func:`use`. :data:`SWITCH` turns tracing off whatever is installed.

Spans (docs/operations.md, "Traces"): ``tidings.publish`` (a publish or a batch, on the library
path and per request on the HTTP path), ``tidings.job <func>`` (each job a worker runs, with its
id and attempt), ``tidings.send <func>`` (a mail or webhook going out), the HTTP server's spans
(FastAPI) and the SQL statements run within any of them (SQLAlchemy).

The trace context crosses processes in the job: a job queued while a span is current carries
its W3C ``traceparent`` (and ``tracestate``) in its args (:func:`stamp`, applied by
:class:`tidings.jobs.model.JobSpec`), and the worker's span for the job continues that trace
(:func:`job_span`), so fan-out, its chunks, each channel's delivery and the mail sent join the
trace of the publish that queued them, whichever process runs them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

from tidings.exceptions import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer, TracerProvider

log = logging.getLogger("tidings.tracing")

SWITCH = True  # False: never trace, as if opentelemetry were not installed
TRACEPARENT = "traceparent"  # the job args' keys of the W3C trace context
TRACESTATE = "tracestate"
SCOPE = "tidings"  # the instrumentation scope of tidings' own spans
SERVICE_NAME = "tidings"  # the service's name unless OTEL_SERVICE_NAME says another

_NULL: contextlib.nullcontext[None] = contextlib.nullcontext()
_UNKNOWN = object()
_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ  # a provider the API loads by name
_given: TracerProvider | None = None  # a provider given to use()
_tracer: Tracer | None = None  # tidings' tracer, once a provider is found


def use(provider: TracerProvider | None) -> None:
    """Trace with ``provider`` rather than the global one (None: the global one again)."""
    global _given, _tracer
    _given, _tracer = provider, None


def provider() -> TracerProvider | None:
    """The tracer provider tidings traces with, or None: tracing is off."""
    if not SWITCH:
        return None
    if _given is not None:
        return _given
    api = sys.modules.get("opentelemetry.trace")  # never imported: no provider was set
    if api is None:
        return None
    # the API's own global: None until a provider is set (a look-up, where asking the API
    # reads the environment each time); an SDK-loaded provider is looked for the API's way
    if getattr(api, "_TRACER_PROVIDER", _UNKNOWN) is None and not _FROM_ENV:
        return None
    found: TracerProvider = api.get_tracer_provider()
    if isinstance(found, api.ProxyTracerProvider | api.NoOpTracerProvider):
        return None
    return found


def tracer() -> Tracer | None:
    """Tidings' tracer, or None while tracing is off."""
    global _tracer
    if not SWITCH:
        return None
    if _tracer is None:
        found = provider()
        if found is None:
            return None
        try:
            version = metadata.version("tidings")
        except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
            version = None
        _tracer = found.get_tracer(SCOPE, version)
    return _tracer


def span(name: str, attributes: Mapping[str, str | int] | None = None
         ) -> contextlib.AbstractContextManager[Span | None]:
    """A span named ``name``, current within the block (None while tracing is off)."""
    found = tracer()
    if found is None:
        return _NULL
    return found.start_as_current_span(name, attributes=attributes)


def failed(exc: BaseException) -> None:
    """Mark the current span as failed by ``exc`` (a failure caught, not raised through it)."""
    if tracer() is None:
        return
    from opentelemetry import trace

    current = trace.get_current_span()
    current.record_exception(exc)
    current.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))


def carrier() -> dict[str, str] | None:
    """The current span's W3C trace context (``traceparent``, ``tracestate``), or None."""
    if tracer() is None:
        return None
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if not trace.get_current_span().get_span_context().is_valid:
        return None
    found: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(found)
    return found or None


def stamp(args: Mapping[str, Any]) -> Mapping[str, Any]:
    """``args`` carrying the current trace context (a job's args as it is queued); ``args``
    itself while tracing is off or no span is current."""
    if tracer() is None:
        return args
    found = carrier()
    if found is None:
        return args
    return {**{k: v for k, v in args.items() if k not in (TRACEPARENT, TRACESTATE)}, **found}


def _context(args: Mapping[str, Any] | None) -> Any:
    """The OpenTelemetry context of the trace context in ``args`` (None: none there)."""
    if not args or TRACEPARENT not in args:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    found = {k: str(args[k]) for k in (TRACEPARENT, TRACESTATE) if k in args}
    return TraceContextTextMapPropagator().extract(found)


@contextlib.contextmanager
def _attached(context: Any) -> Iterator[None]:
    from opentelemetry import context as otel_context

    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


def resumed(args: Mapping[str, Any] | None) -> contextlib.AbstractContextManager[None]:
    """Within the block, the trace context carried in ``args`` (a job's args, a
    :func:`carrier`) is current: spans started and jobs queued there join its trace."""
    if tracer() is None:
        return _NULL
    context = _context(args)
    return _NULL if context is None else _attached(context)


def job_span(func: str, job_id: int, attempt: int, args: Mapping[str, Any]
             ) -> contextlib.AbstractContextManager[Span | None]:
    """The span of one run of a job, continuing the trace its args carry."""
    found = tracer()
    if found is None:
        return _NULL
    from opentelemetry.trace import SpanKind

    return found.start_as_current_span(
        f"tidings.job {func}", context=_context(args), kind=SpanKind.CONSUMER,
        attributes=_job_attributes(func, job_id, attempt))


def _job_attributes(func: str, job_id: int, attempt: int) -> dict[str, str | int]:
    return {"tidings.job.func": func, "tidings.job.id": job_id, "tidings.job.attempt": attempt}


@contextlib.contextmanager
def job_spans(jobs: Sequence[tuple[str, int, int, Mapping[str, Any]]]
              ) -> Iterator[list[dict[str, str] | None]]:
    """One span per job (func, id, attempt, args) run together in one unit, each continuing
    its job's trace; yields each span's trace context (None while tracing is off), for the
    handler to resume per job. A failure of the unit marks every span."""
    found = tracer()
    if found is None:
        yield [None] * len(jobs)
        return
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    spans = [found.start_span(f"tidings.job {func}", context=_context(args),
                              kind=SpanKind.CONSUMER,
                              attributes=_job_attributes(func, job_id, attempt))
             for func, job_id, attempt, args in jobs]
    carriers: list[dict[str, str] | None] = []
    for one in spans:
        carried: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carried, trace.set_span_in_context(one))
        carriers.append(carried)
    try:
        yield carriers
    except BaseException as exc:
        for one in spans:
            one.record_exception(exc)
            one.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)))
        raise
    finally:
        for one in spans:
            one.end()


# the probes' routes, traced only if OTEL_PYTHON_[FASTAPI_]EXCLUDED_URLS says otherwise
PROBES = "//[^/]+/healthz$,//[^/]+/readyz$,//[^/]+/metrics$"


def flush(timeout_seconds: float = 5.0) -> None:
    """Export the spans still buffered (a server's shutdown: uvicorn ends by raising the
    signal it caught again, and the SDK's exit hook would not run)."""
    found = provider()
    force_flush = getattr(found, "force_flush", None)
    if force_flush is not None:
        force_flush(int(timeout_seconds * 1000))


def instrument_app(app: Any) -> None:
    """Trace the HTTP requests of a FastAPI app (an incoming ``traceparent`` continues):
    one span a request, none for each message of its body or answer (a live stream's
    events), none for the health checks and scrapes (:data:`PROBES`)."""
    found = provider()
    if found is None:
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    chosen = any(k in os.environ for k in ("OTEL_PYTHON_FASTAPI_EXCLUDED_URLS",
                                           "OTEL_PYTHON_EXCLUDED_URLS"))
    FastAPIInstrumentor.instrument_app(app, tracer_provider=found,
                                       excluded_urls=None if chosen else PROBES,
                                       exclude_spans=["receive", "send"])


def instrument_engine(engine: Any) -> None:
    """Trace the SQL statements of a SQLAlchemy engine run within a span (a request, a
    publish, a job): a worker's idle polls start no trace of their own. The hot reads and
    writes run on the driver's connection (``Database.fetch``/``run``) are not traced."""
    found = provider()
    if found is None:
        return
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
    from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer
    from opentelemetry.instrumentation.sqlalchemy.version import __version__
    from opentelemetry.metrics import NoOpUpDownCounter

    class Statements(EngineTracer):
        def _before_cur_exec(self, conn: Any, cursor: Any, statement: Any, params: Any,
                             context: Any, executemany: bool) -> Any:
            if context is None:  # Database.fetch/run on the driver: no after_cursor_execute
                return statement, params
            return super()._before_cur_exec(  # type: ignore[no-untyped-call]
                conn, cursor, statement, params, context, executemany)

    # SQLAlchemyInstrumentor().instrument(engine=…) instruments once per process; its
    # EngineTracer, as it uses it, instruments each engine of ours
    sql = found.get_tracer(SQLAlchemyInstrumentor.__module__, __version__)
    Statements(_WithinSpan(sql), engine,  # type: ignore[no-untyped-call]
               NoOpUpDownCounter("db.client.connections.usage"), enable_commenter=False)


class _WithinSpan:
    """A tracer that starts spans only under a current span (else a non-recording one)."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def start_span(self, name: str, context: Any = None, *args: Any, **kwargs: Any) -> Span:
        from opentelemetry import trace

        if not trace.get_current_span(context).get_span_context().is_valid:
            return trace.INVALID_SPAN
        return self.tracer.start_span(name, context, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tracer, name)


# -- tidings serve / tidings worker: the SDK from the OTEL_* variables ------------------------

def wanted(env: Mapping[str, str]) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces: an exporter named (not ``none``) or
    an OTLP endpoint set, and the SDK not disabled."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    names = _exporter_names(env)
    if "OTEL_TRACES_EXPORTER" in env:
        return bool(names)
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def _exporter_names(env: Mapping[str, str]) -> list[str]:
    names = [n.strip() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",")]
    return [n for n in names if n and n != "none"]


def configure(env: Mapping[str, str] | None = None) -> bool:
    """Set the global tracer provider from the ``OTEL_*`` variables when they ask for traces
    (:func:`wanted`) and none is set yet; True if tidings traces now. A provider set already
    (by the application) is kept. Asking for traces without opentelemetry installed, or for
    an exporter that is not, is a :class:`ConfigError`."""
    env = os.environ if env is None else env
    if not SWITCH or not wanted(env):
        return False
    if provider() is not None:
        return True
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError("OTEL_* asks for traces but OpenTelemetry is not installed: "
                          "pip install 'tidings[otel]'") from exc
    named = bool(env.get("OTEL_SERVICE_NAME")) or "service.name=" in env.get(
        "OTEL_RESOURCE_ATTRIBUTES", "")
    built = TracerProvider(resource=Resource.create({} if named else
                                                    {"service.name": SERVICE_NAME}))
    for name in _exporter_names(env):
        built.add_span_processor(BatchSpanProcessor(_exporter(name, env)))
    trace.set_tracer_provider(built)
    use(None)
    return provider() is not None


def _exporter(name: str, env: Mapping[str, str]) -> SpanExporter:
    """The span exporter ``OTEL_TRACES_EXPORTER`` names (``otlp``: over the protocol
    ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`` names, ``http/protobuf`` by default)."""
    if name == "otlp":
        protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                    or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
        name = "otlp_proto_grpc" if protocol == "grpc" else "otlp_proto_http"
    found = metadata.entry_points(group="opentelemetry_traces_exporter", name=name)
    if not found:
        raise ConfigError(f"OTEL_TRACES_EXPORTER names {name!r}, which is not installed "
                          "(tidings[otel] brings otlp over http/protobuf, and console)")
    exporter: SpanExporter = next(iter(found)).load()()
    return exporter


__all__ = ["PROBES", "SWITCH", "TRACEPARENT", "TRACESTATE", "carrier", "configure", "failed",
           "flush", "instrument_app", "instrument_engine", "job_span", "job_spans", "provider",
           "resumed", "span", "stamp", "tracer", "use", "wanted"]
