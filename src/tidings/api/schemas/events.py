"""Bodies of publishing: events, batches, retractions."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from tidings.api.schemas.common import Strict, at_least_one, at_least_one_schema
from tidings.api.schemas.ids import IdempotencyKey, ObjectKey, TypeName, UserId
from tidings.domain.events import MAX_PAYLOAD_DEPTH, MAX_PAYLOAD_KEYS, depth_and_keys


def _bounded(payload: dict[str, Any]) -> dict[str, Any]:
    """Bound what every later read must handle (a render, an encoder, a client)."""
    depth, keys = depth_and_keys(payload)
    if depth > MAX_PAYLOAD_DEPTH:
        raise ValueError(f"nests {depth} levels deep; at most {MAX_PAYLOAD_DEPTH} are allowed")
    if keys > MAX_PAYLOAD_KEYS:
        raise ValueError(f"holds {keys} keys; at most {MAX_PAYLOAD_KEYS} are allowed")
    return payload


class EventIn(Strict):
    type: TypeName
    actor: UserId | None = None
    object: ObjectKey | None = None
    recipients: list[UserId] = Field(default_factory=list)
    exclude: list[UserId] = Field(default_factory=list,
                                  description="Users never told of this event (privacy).")
    payload: Annotated[dict[str, Any], AfterValidator(_bounded)] = Field(
        default_factory=dict,
        description=f"Any JSON object up to {MAX_PAYLOAD_DEPTH} levels deep with at most "
                    f"{MAX_PAYLOAD_KEYS:,} keys in all (and 64 KiB).")
    idempotency_key: IdempotencyKey | None = None


class Accepted(BaseModel):
    id: str
    status: Literal["accepted"] = "accepted"


class BatchIn(Strict):
    events: list[dict[str, Any]] = Field(max_length=1000, min_length=1)


class BatchItem(BaseModel):
    index: int
    status: Literal["accepted", "error"]
    id: str | None = None
    error: dict[str, Any] | None = None


class BatchOut(BaseModel):
    items: list[BatchItem]


class RetractionIn(Strict):
    """At least one of the three, not null."""

    model_config = ConfigDict(json_schema_extra=at_least_one_schema("type", "actor", "object"))
    type: TypeName | None = None
    actor: UserId | None = None
    object: ObjectKey | None = None

    @model_validator(mode="after")
    def _given(self) -> RetractionIn:
        at_least_one(self, ("type", "actor", "object"))
        return self


class Removed(BaseModel):
    removed: int
