"""Operations: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import asyncio
from typing import Any

from anyio import to_thread
from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from tidings.api import errors
from tidings.api.deps import State, error_responses
from tidings.api.errors import respond
from tidings.api.schemas.common import Health
from tidings.api.schemas.errors import ErrorResponse


def build() -> APIRouter:
    router = APIRouter(tags=["operations"], responses=error_responses(400))

    @router.get("/healthz", response_model=Health)
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "ok"}

    @router.head("/healthz", response_model=Health)
    async def healthz_head() -> dict[str, str]:
        """The process is alive (the status alone, for probes that send ``HEAD``)."""
        return {"status": "ok"}

    @router.get("/readyz", response_model=Health, responses={503: {"model": ErrorResponse}})
    async def readyz(state: State) -> Any:
        """The store and the queue are reachable (answered within ``TIDINGS_READY_TIMEOUT``)."""
        return await ready(state)

    @router.head("/readyz", response_model=Health, responses={503: {"model": ErrorResponse}})
    async def readyz_head(state: State) -> Any:
        """Whether the store and the queue are reachable, in the status alone (``HEAD``)."""
        return await ready(state)

    async def ready(state: Any) -> Any:
        try:
            # a deadline on the whole check: a store that hangs makes it 503, not a hang. The
            # thread is abandoned at the deadline, not awaited (it ends at its own timeouts).
            await asyncio.wait_for(to_thread.run_sync(state.tidings.ping, abandon_on_cancel=True),
                                   state.tidings.config.ready_timeout)
        except Exception as exc:
            return respond(503, "unavailable", f"store not reachable: {type(exc).__name__}",
                           headers={"Retry-After": errors.RETRY_AFTER_SECONDS})
        return {"status": "ready"}

    @router.get("/metrics", response_class=PlainTextResponse,
                responses={200: {"content": {"text/plain": {}}}})
    async def metrics(state: State) -> Response:
        """Prometheus text format: this process's figures (with ``tidings serve --workers N``,
        the sum of its N processes) and the job queue's, read from the queue."""
        text = await to_thread.run_sync(generate_latest, state.metrics.scrape_registry)
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    return router
