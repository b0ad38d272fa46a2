"""Publishing (server key): events, batches of events, retractions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from tidings.api import errors
from tidings.api.auth import Principal
from tidings.api.deps import Server, State, error_responses
from tidings.api.groupcommit import publish_group
from tidings.api.ratelimit import admit_shared
from tidings.api.schemas.events import Accepted, BatchIn, BatchOut, EventIn, Removed, RetractionIn
from tidings.api.state import AppState
from tidings.exceptions import TidingsError

ERRORS = error_responses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503)


async def _limit(state: AppState, caller: Principal, cost: float) -> None:
    await admit_shared(state.limiter, caller.key or "", cost, what="events",
                       setting="TIDINGS_RATE_LIMIT")


def build() -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["events"], responses=ERRORS)

    @router.post("/events", response_model=Accepted, status_code=202)
    async def publish(body: EventIn, state: State, caller: Server) -> dict[str, str]:
        """Accept an event; 202 means durable. A repeated idempotency key returns the first."""
        # idempotency keys are scoped per server key (Principal.idempotency_scope)
        await _limit(state, caller, 1)
        published = await state.commits.publish(body.model_dump(exclude_unset=True),
                                                caller.idempotency_scope)
        if published.created:
            state.metrics.events_accepted.inc()
        return {"id": published.id, "status": "accepted"}

    @router.post("/events/batch", response_model=BatchOut, status_code=202)
    async def publish_batch(body: BatchIn, state: State, caller: Server) -> dict[str, Any]:
        """Up to 1,000 events; each item is answered on its own (accepted or its error)."""
        await _limit(state, caller, len(body.events))
        items: list[dict[str, Any]] = []
        valid: list[tuple[int, dict[str, Any]]] = []
        for index, raw in enumerate(body.events):
            try:
                event = EventIn.model_validate(raw)
                state.tidings.validate_event(event.model_dump(exclude_unset=True))
                valid.append((index, event.model_dump(exclude_unset=True)))
            except TidingsError as exc:
                items.append(_item_error(index, exc.code, str(exc), getattr(exc, "field", None)))
            except ValueError as exc:
                items.append(_item_error(index, "invalid_input", _pydantic_message(exc), None))
        accepted: dict[int, str] = {}
        # one transaction for all, each item answered on its own (group commit)
        outcomes = await run_in_threadpool(publish_group, state.tidings, [
            (fields, caller.idempotency_scope) for _, fields in valid])
        for (index, _), outcome in zip(valid, outcomes, strict=True):
            if isinstance(outcome, TidingsError):
                if errors.status_of(outcome) == 503:
                    raise outcome
                items.append(_item_error(index, outcome.code, str(outcome),
                                         getattr(outcome, "field", None)))
                continue
            accepted[index] = outcome.id
            if outcome.created:
                state.metrics.events_accepted.inc()
        items += [{"index": i, "status": "accepted", "id": event_id}
                  for i, event_id in accepted.items()]
        return {"items": sorted(items, key=lambda item: item["index"])}

    @router.post("/retractions", response_model=Removed)
    async def retract(body: RetractionIn, state: State, _caller: Server) -> dict[str, int]:
        """Remove the matching notifications from every inbox (a like withdrawn)."""
        removed = await run_in_threadpool(state.tidings.retract, type=body.type,
                                          actor=body.actor, object=body.object)
        return {"removed": removed}

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
