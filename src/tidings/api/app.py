"""The FastAPI application: it assembles the routers, middleware and error handlers around an
engine, and runs the embedded job worker for its lifetime."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from tidings import tracing
from tidings.api import (
    docs,
    errors,
    hotpublish,
    hotreads,
    middleware,
    routes_events,
    routes_groups,
    routes_mail,
    routes_ops,
    routes_push,
    routes_types,
    routes_user,
    web,
)
from tidings.api.auth import Authenticator
from tidings.api.deps import me_user, no_unknown_query, path_user, principal
from tidings.api.headers import SecurityHeaders
from tidings.api.hostauth import UserResolver, principal_with
from tidings.api.live import TRANSPORT, OpenStreams, transport_of
from tidings.api.paths import keep_root
from tidings.api.ratelimit import RateLimiter, SharedRateLimiter
from tidings.api.state import AppState
from tidings.config import Config
from tidings.engine import Tidings
from tidings.exceptions import ConfigError
from tidings.metrics import Metrics, process_ended


class Api(FastAPI):
    """FastAPI, keeping each connection's transport in the scope (``live.TRANSPORT``): its
    ``send`` is the server's own only here, before any middleware wraps it."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[TRANSPORT] = transport_of(send)
            keep_root(scope)
        await super().__call__(scope, receive, send)


def create_app(tidings: Tidings, *, api_keys: tuple[str, ...], token_secret: str | None,
               run_worker: bool = False, worker_concurrency: int = 1,
               rate_per_second: float = 1000.0, user_rate_per_second: float = 20.0,
               stream_interval: float = 0.5,
               max_body_bytes: int = 4 * 1024 * 1024, max_header_bytes: int = 32 * 1024,
               max_streams: int = 200,
               max_streams_per_user: int = 5, stream_write_timeout: float | None = None,
               demo_users: list[tuple[str, str]] | None = None,
               user_resolver: UserResolver | None = None) -> FastAPI:
    """Build the app around an engine. ``run_worker`` runs the job worker in this process;
    ``max_streams`` bounds the live streams it holds, ``max_streams_per_user`` a user's;
    ``user_rate_per_second`` is each user token's request rate (0: no limit);
    ``stream_write_timeout`` (default ``TIDINGS_STREAM_WRITE_TIMEOUT``) is how long a write to
    a stream may wait for its client to read before the connection is cut.
    ``user_resolver``, a FastAPI dependency of a host application that returns the signed-in
    user's id (or None), makes that sign-in a user of the API (:mod:`tidings.api.hostauth`;
    mounting the app in another: docs/mount.md)."""
    metrics = Metrics(queue=tidings.queue.figures)
    write_timeout = (tidings.config.stream_write_timeout if stream_write_timeout is None
                     else stream_write_timeout)
    state = AppState(tidings, Authenticator(api_keys, token_secret), metrics,
                     SharedRateLimiter(tidings.store, rate_per_second),
                     stream_interval=stream_interval,
                     stream_write_timeout=write_timeout,
                     streams=OpenStreams(per_user=max_streams_per_user, total=max_streams,
                                         on_change=metrics.open_streams.inc),
                     user_limiter=RateLimiter(user_rate_per_second))
    tidings.listeners.append(metrics.observe)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        worker = tidings.worker(concurrency=worker_concurrency) if run_worker else None
        if worker is not None:
            worker.start()
        try:
            yield
        finally:
            if worker is not None:
                await run_in_threadpool(worker.stop)
            process_ended()  # its live gauges (open streams) leave the shared sum
            tracing.flush()  # the spans still buffered, before the process ends

    app = Api(title="tidings", version="1", lifespan=lifespan,
              description="Notification and activity-feed engine: the HTTP API v1.",
              dependencies=[Depends(no_unknown_query)],
              docs_url=None, redoc_url=None)  # served offline by docs.install
    app.state.tidings = state
    errors.install(app)
    app.include_router(routes_events.build())
    app.include_router(routes_types.build())
    app.include_router(routes_user.build(path_user, "/v1/users/{user}", "users"))
    app.include_router(routes_user.build(me_user, "/v1/me", "me"))
    app.include_router(routes_user.build_erase())
    app.include_router(routes_mail.build())
    app.include_router(routes_push.build_public())
    app.include_router(routes_push.build(path_user, "/v1/users/{user}", "users"))
    app.include_router(routes_push.build(me_user, "/v1/me", "me"))
    app.include_router(routes_groups.build())
    app.include_router(routes_ops.build())
    docs.install(app)
    if user_resolver is None:  # the hot reads know tidings' own credentials only
        hotreads.install(app, state)  # the plain badge count and first page, before FastAPI's
    else:
        app.dependency_overrides[principal] = principal_with(user_resolver)
    hotpublish.install(app, state)  # a plain POST /v1/events, likewise
    app.add_middleware(middleware.BodyChecks, max_bytes=max_body_bytes)
    app.add_middleware(middleware.HeaderLimit, max_bytes=max_header_bytes)
    app.add_middleware(middleware.RequestContext, metrics=metrics)
    app.add_middleware(SecurityHeaders, docs_paths=docs.PAGES)
    # Bearer tokens, no cookies: by default any site may embed <tidings-bell> and call the
    # API; TIDINGS_CORS_ORIGINS narrows that to the sites named.
    app.add_middleware(CORSMiddleware, allow_origins=list(tidings.config.cors_origins),
                       allow_methods=["*"],
                       allow_headers=["Authorization", "Content-Type", "X-Request-Id"],
                       expose_headers=["X-Request-Id", "Retry-After"])
    if demo_users is not None:
        users = [{"user": user, "token": token} for user, token in demo_users]

        @app.get("/demo/users", include_in_schema=False)
        async def demo_sign_in() -> dict[str, Any]:
            """The demo's user picker (only `tidings demo` serves this)."""
            return {"items": users}

    web.mount(app)
    tracing.instrument_app(app)  # tracing on: every request's span (a traceparent continues)
    return app


def app_from_env() -> FastAPI:
    """The factory ``tidings serve`` hands uvicorn (settings from the environment)."""
    config = Config.from_env()
    if not config.api_keys:
        raise ConfigError("TIDINGS_API_KEY is not set: the server needs at least one key")
    tracing.configure()  # OTEL_*: in each server process, before the engine (its SQL traced)
    tidings = Tidings(config)
    tidings.check_schema()
    tidings.load_types()  # stores the types file's types, so every process reads them
    # set by `tidings serve` for the processes it starts
    run_worker = os.environ.get("TIDINGS_SERVE_WORKER", "1") == "1"
    return create_app(
        tidings, api_keys=config.api_keys, token_secret=config.token_secret,
        run_worker=run_worker,
        worker_concurrency=int(os.environ.get("TIDINGS_SERVE_WORKER_CONCURRENCY", "1")),
        rate_per_second=config.rate_limit, user_rate_per_second=config.user_rate_limit,
        max_header_bytes=config.max_header_bytes,
    )


__all__ = ["app_from_env", "create_app"]
