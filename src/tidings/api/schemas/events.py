"""Bodies of publishing: events, batches, retractions."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from tidings.api.schemas.common import Strict, at_least_one, at_least_one_schema
from tidings.api.schemas.ids import ObjectKey, TypeName, UserId


class EventIn(Strict):
    type: TypeName
    actor: UserId | None = None
    object: ObjectKey | None = None
    recipients: list[UserId] = Field(default_factory=list)
    exclude: list[UserId] = Field(default_factory=list,
                                  description="Users never told of this event (privacy).")
    payload: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: Annotated[str, StringConstraints(min_length=1, max_length=255)] | None = None


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
