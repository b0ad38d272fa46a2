"""The FastAPI application: routes of ``API.md``, auth, errors, metrics, the embedded worker."""


import contextlib
import functools
import json
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Path, Query, Request, Response
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from tidings.api import errors, routes_user, web
from tidings.api import schemas as s
from tidings.api.auth import Authenticator, Principal, authorize_user, require_server
from tidings.api.errors import ApiError, respond
from tidings.api.metrics import Metrics
from tidings.api.ratelimit import RateLimiter
from tidings.api.state import AppState, get_state
from tidings.clock import to_rfc3339
from tidings.config import Config
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.exceptions import ConfigError, TidingsError

log = logging.getLogger("tidings.api")
request_log = logging.getLogger("tidings.http")

State = Annotated[AppState, Depends(get_state)]
USER_PATH = Path(pattern=r"^[A-Za-z0-9_.:@-]{1,255}$", description="The application's user id.")
UNSUBSCRIBE_TOKEN = Path(min_length=3, max_length=600, pattern=r"^[A-Za-z0-9_-]+\.[0-9a-f]+$")
TYPE_PATH = Path(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorResponse} for code in (400, 401, 403, 404, 409, 413, 415, 422, 429,
                                                  503)
}


def principal(request: Request, state: State,
              authorization: Annotated[str | None, Header()] = None,
              access_token: Annotated[str | None, Query(max_length=4096,
                                                        include_in_schema=False)] = None,
              ) -> Principal:
    """Who calls. ``?access_token=`` is accepted only on streams (browsers' EventSource)."""
    query_token = access_token if request.url.path.endswith("/stream") else None
    return state.auth.authenticate(authorization, query_token)


Caller = Annotated[Principal, Depends(principal)]


def path_user(caller: Caller, user: Annotated[str, USER_PATH]) -> str:
    authorize_user(caller, user)
    return user


def me_user(caller: Caller) -> str:
    if caller.user is None:
        raise ApiError(403, "/v1/me needs a user token; a server key names the user in "
                            "/v1/users/{user}")
    return caller.user


def server(caller: Caller) -> Principal:
    require_server(caller)
    return caller


Server = Annotated[Principal, Depends(server)]


def _type_out(event_type: EventType) -> dict[str, Any]:
    return event_type.to_dict()


def build_events_router() -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["events"], responses=ERRORS)

    def limit(state: AppState, caller: Principal, cost: float) -> None:
        wait = state.limiter.take(caller.key or "", cost)
        if wait:
            raise ApiError(429, "too many events; slow down", headers={
                "Retry-After": RateLimiter.retry_after(wait)})

    @router.post("/events", response_model=s.Accepted, status_code=202)
    async def publish(body: s.EventIn, state: State, caller: Server) -> dict[str, str]:
        """Accept an event; 202 means durable. A repeated idempotency key returns the first."""
        limit(state, caller, 1)
        published = await run_in_threadpool(state.tidings.publish,
                                            body.model_dump(exclude_unset=True))
        if published.created:
            state.metrics.events_accepted.inc()
        return {"id": published.id, "status": "accepted"}

    @router.post("/events/batch", response_model=s.BatchOut, status_code=202)
    async def publish_batch(body: s.BatchIn, state: State, caller: Server) -> dict[str, Any]:
        """Up to 1,000 events; each item is answered on its own (accepted or its error)."""
        limit(state, caller, len(body.events))
        items: list[dict[str, Any]] = []
        valid: list[tuple[int, dict[str, Any]]] = []
        for index, raw in enumerate(body.events):
            try:
                event = s.EventIn.model_validate(raw)
                state.tidings.validate_event(event.model_dump(exclude_unset=True))
                valid.append((index, event.model_dump(exclude_unset=True)))
            except TidingsError as exc:
                items.append(_item_error(index, exc.code, str(exc), getattr(exc, "field", None)))
            except ValueError as exc:
                items.append(_item_error(index, "invalid_input", _pydantic_message(exc), None))
        accepted: dict[int, str] = {}
        for index, fields in valid:
            try:
                published = await run_in_threadpool(state.tidings.publish, fields)
            except TidingsError as exc:
                if errors.status_of(exc) == 503:
                    raise
                items.append(_item_error(index, exc.code, str(exc), getattr(exc, "field", None)))
                continue
            accepted[index] = published.id
            if published.created:
                state.metrics.events_accepted.inc()
        items += [{"index": i, "status": "accepted", "id": event_id}
                  for i, event_id in accepted.items()]
        return {"items": sorted(items, key=lambda item: item["index"])}

    @router.post("/retractions", response_model=s.Removed)
    async def retract(body: s.RetractionIn, state: State, _caller: Server) -> dict[str, int]:
        """Remove the matching notifications from every inbox (a like withdrawn)."""
        removed = await run_in_threadpool(state.tidings.retract, type=body.type,
                                          actor=body.actor, object=body.object)
        return {"removed": removed}

    @router.get("/types", response_model=s.TypeList, tags=["types"])
    async def list_types(state: State, _caller: Caller) -> dict[str, Any]:
        await run_in_threadpool(state.tidings.load_types)
        return {"items": [_type_out(t) for t in state.tidings.types]}

    @router.get("/types/{name}", response_model=s.TypeOut, tags=["types"])
    async def get_type(name: Annotated[str, TYPE_PATH], state: State,
                       _caller: Caller) -> dict[str, Any]:
        try:
            event_type = await run_in_threadpool(state.tidings.get_type, name)
        except TidingsError:
            raise ApiError(404, f"event type {name!r} does not exist") from None
        return _type_out(event_type)

    @router.put("/types/{name}", response_model=s.TypeOut, tags=["types"])
    async def put_type(name: Annotated[str, TYPE_PATH], body: s.TypeIn, state: State,
                       _caller: Server) -> dict[str, Any]:
        """Declare or replace an event type (stored: every process sees it)."""
        data = body.model_dump()
        event_type = EventType.from_dict(name, data)
        await run_in_threadpool(state.tidings.define_type, event_type)
        return _type_out(event_type)

    @router.post("/tokens", response_model=s.TokenOut, status_code=201, tags=["auth"])
    async def mint_token(body: s.TokenIn, state: State, _caller: Server) -> dict[str, str]:
        """Mint a user token (HS256 JWT with ``sub`` and ``exp``)."""
        token, expires = state.auth.mint(body.user, body.ttl_seconds)
        return {"token": token, "expires_at": to_rfc3339(expires * 1_000_000)}

    return router


def _item_error(index: int, code: str, message: str, field: str | None) -> dict[str, Any]:
    details = [{"field": field, "message": message}] if field else []
    return {"index": index, "status": "error",
            "error": {"code": code, "message": message, "details": details}}


def _pydantic_message(exc: ValueError) -> str:
    errors_list = getattr(exc, "errors", None)
    if callable(errors_list):
        first = errors_list()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "event"
        return f"{where}: {first.get('msg', 'invalid')}"
    return str(exc)


# The page is HTML, but a bad link answers with the JSON error (a "model" here would be
# published as text/html, the route's own media type).
BAD_LINK: dict[int | str, dict[str, Any]] = {404: {
    "description": "Not a valid unsubscribe link.",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
}}


def build_mail_router() -> APIRouter:
    router = APIRouter(tags=["email"])

    def unsubscribing(state: AppState, token: str) -> str:
        user = state.tidings.user_of_unsubscribe_token(token)
        if user is None:
            raise ApiError(404, "this unsubscribe link is not valid")
        return user

    @router.get("/v1/unsubscribe/{token}", response_class=HTMLResponse,
                responses=BAD_LINK)
    async def unsubscribe_page(token: Annotated[str, UNSUBSCRIBE_TOKEN], state: State
                               ) -> HTMLResponse:
        """A page with an Unsubscribe button; opening the link changes nothing."""
        user = unsubscribing(state, token)
        return HTMLResponse(_unsubscribe_html(user, done=False))

    @router.post("/v1/unsubscribe/{token}", response_class=HTMLResponse,
                 responses=BAD_LINK)
    async def unsubscribe(token: Annotated[str, UNSUBSCRIBE_TOKEN], state: State
                          ) -> HTMLResponse:
        """One-click unsubscribe (RFC 8058): no more notification mail to this user."""
        user = unsubscribing(state, token)
        await run_in_threadpool(state.tidings.unsubscribe_email, user)
        return HTMLResponse(_unsubscribe_html(user, done=True))

    @router.post("/v1/bounces", response_model=s.Bounce, responses=ERRORS)
    async def bounce(body: s.BounceIn, state: State, _caller: Server) -> dict[str, Any]:
        """Report a hard bounce: mail to this address stops; web delivery goes on."""
        await run_in_threadpool(state.tidings.report_bounce, body.address, body.reason)
        return {"address": body.address.strip().lower(), "bounced": True}

    @router.delete("/v1/bounces/{address}", response_model=s.Bounce, responses=ERRORS)
    async def clear_bounce(address: Annotated[str, Path(max_length=254)], state: State,
                           _caller: Server) -> dict[str, Any]:
        """The address works again: mail resumes."""
        await run_in_threadpool(state.tidings.clear_bounce, address)
        return {"address": address.strip().lower(), "bounced": False}

    return router


@functools.lru_cache(maxsize=1)
def _pages() -> Environment:
    return Environment(loader=PackageLoader("tidings.api", "templates"),
                       autoescape=select_autoescape(["html"]))


def _unsubscribe_html(user: str, *, done: bool) -> str:
    return _pages().get_template("unsubscribe.html").render(user=user, done=done)


def build_ops_router() -> APIRouter:
    router = APIRouter(tags=["operations"])

    @router.get("/healthz", response_model=s.Health)
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @router.get("/readyz", response_model=s.Health,
                responses={503: {"model": s.ErrorResponse}})
    async def readyz(state: State) -> Any:
        """The store and the queue are reachable."""
        try:
            await run_in_threadpool(state.tidings.ping)
        except Exception as exc:
            return respond(503, "unavailable", f"store not reachable: {type(exc).__name__}",
                           headers={"Retry-After": errors.RETRY_AFTER_SECONDS})
        return {"status": "ready"}

    @router.get("/metrics", response_class=PlainTextResponse,
                responses={200: {"content": {"text/plain": {}}}})
    async def metrics(state: State) -> Response:
        """Prometheus text format."""
        return Response(generate_latest(state.metrics.registry),
                        media_type=CONTENT_TYPE_LATEST)

    return router


def create_app(tidings: Tidings, *, api_keys: tuple[str, ...], token_secret: str | None,
               run_worker: bool = False, worker_concurrency: int = 1,
               rate_per_second: float = 1000.0, stream_interval: float = 0.5,
               max_body_bytes: int = 4 * 1024 * 1024,
               demo_users: list[tuple[str, str]] | None = None) -> FastAPI:
    """Build the app around an engine. ``run_worker`` runs the job worker in this process."""
    metrics = Metrics()
    state = AppState(tidings, Authenticator(api_keys, token_secret), metrics,
                     RateLimiter(rate_per_second), max_body_bytes=max_body_bytes,
                     stream_interval=stream_interval)
    tidings.listeners.append(lambda name, value: _observe(metrics, name, value))

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

    app = FastAPI(title="tidings", version="1", lifespan=lifespan,
                  description="Notification and activity-feed engine: the HTTP API v1.")
    app.state.tidings = state
    errors.install(app)
    app.include_router(build_events_router())
    app.include_router(routes_user.build(path_user, "/v1/users/{user}", "users"))
    app.include_router(routes_user.build(me_user, "/v1/me", "me"))
    app.include_router(build_mail_router())
    app.include_router(build_ops_router())
    _install_middleware(app, state)
    # Bearer tokens, no cookies: any site may embed <tidings-bell> and call the API.
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["*"],
                       allow_headers=["Authorization", "Content-Type", "X-Request-Id"],
                       expose_headers=["X-Request-Id", "Retry-After"])
    if demo_users is not None:
        users = [{"user": user, "token": token} for user, token in demo_users]

        @app.get("/demo/users", include_in_schema=False)
        async def demo_sign_in() -> dict[str, Any]:
            """The demo's user picker (only `tidings demo` serves this)."""
            return {"items": users}

    web.mount(app)
    return app


def _observe(metrics: Metrics, name: str, value: float) -> None:
    if name == "delivered":
        metrics.notifications_written.inc(value)
    elif name == "fanout_seconds":
        metrics.fanout_seconds.observe(value)
    elif name == "emails_sent":
        metrics.emails_sent.inc(value)
    elif name.startswith("job_"):
        metrics.jobs.labels(name[4:]).inc(value)


def _install_middleware(app: FastAPI, state: AppState) -> None:
    @app.middleware("http")
    async def guard(request: Request,
                    call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
        started = time.perf_counter()
        response = await _checked(request, call_next, state)
        elapsed = time.perf_counter() - started
        response.headers["X-Request-Id"] = request_id[:64]
        route = request.scope.get("route")
        template = getattr(route, "path", "unmatched")
        state.metrics.requests.labels(request.method, template,
                                      str(response.status_code)).observe(elapsed)
        request_log.info("%s %s %s %.1fms", request.method, template, response.status_code,
                         elapsed * 1000, extra={"request_id": request_id[:64]})
        return response


async def _checked(request: Request, call_next: Callable[[Request], Awaitable[Response]],
                   state: AppState) -> Response:
    """413 for bodies over the limit, 415 for bodies that are not JSON."""
    if request.method in ("POST", "PUT", "PATCH") and \
            not request.url.path.startswith("/v1/unsubscribe/"):
        length = request.headers.get("content-length")
        if length is not None:
            try:
                too_big = int(length) > state.max_body_bytes
            except ValueError:
                return respond(400, "bad_request", "Content-Length is not a number")
            if too_big:
                return respond(413, "payload_too_large",
                               f"the body is over {state.max_body_bytes} bytes")
        body = await request.body()
        if len(body) > state.max_body_bytes:
            return respond(413, "payload_too_large",
                           f"the body is over {state.max_body_bytes} bytes")
        content_type = request.headers.get("content-type", "")
        if body and "json" not in content_type.lower():
            return respond(415, "unsupported_media_type", "send the body as application/json")
        if body:
            try:
                json.loads(body)
            except ValueError:
                return respond(400, "bad_request", "the body is not valid JSON")
    return await call_next(request)


def app_from_env() -> FastAPI:
    """The factory ``tidings serve`` hands uvicorn (settings from the environment)."""
    config = Config.from_env()
    if not config.api_keys:
        raise ConfigError("TIDINGS_API_KEY is not set: the server needs at least one key")
    tidings = Tidings(config)
    tidings.check_schema()
    tidings.load_types()
    for event_type in tidings.types:
        tidings.define_type(event_type)
    # set by `tidings serve` for the processes it starts
    run_worker = os.environ.get("TIDINGS_SERVE_WORKER", "1") == "1"
    return create_app(
        tidings, api_keys=config.api_keys, token_secret=config.token_secret,
        run_worker=run_worker,
        worker_concurrency=int(os.environ.get("TIDINGS_SERVE_WORKER_CONCURRENCY", "1")),
        rate_per_second=config.rate_limit,
    )


__all__ = ["JSONResponse", "app_from_env", "create_app"]
