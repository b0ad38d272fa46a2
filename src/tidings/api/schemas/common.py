"""Building blocks the resource schemas share: strict models, JSON integers, RFC 3339
timestamps, the channel and section names, and the 'at least one of' rule."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict

Channel = Literal["web", "email", "webhook", "push"]
Section = Literal["alert", "message"]
Audience = Literal["recipients", "object_subscribers", "actor_followers"]

RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})")


def _rfc3339(value: Any) -> Any:
    """Only RFC 3339 text is a timestamp (not a number, a date, or a time without offset),
    and only one that falls in years 1-9999 in UTC."""
    if not isinstance(value, str) or not RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 timestamp such as 2024-05-01T12:00:00Z")
    parsed = datetime.fromisoformat(value.upper())
    try:
        parsed.astimezone(UTC)
    except (OverflowError, ValueError):  # 0001-01-01T00:00:00+23:59 is in year 0
        raise ValueError("is out of range: it must fall in the years 1-9999 in UTC") from None
    return parsed


Timestamp = Annotated[AwareDatetime, BeforeValidator(_rfc3339)]


def json_int(value: Any) -> Any:
    """A JSON integer: 5 or 5.0 (JSON Schema's "integer"), never true, "5" or 5.5."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be an integer")
    return value


JsonInt = Annotated[int, BeforeValidator(json_int)]


def at_least_one(model: BaseModel, names: tuple[str, ...]) -> None:
    """Raise unless one of ``names`` is given and not null."""
    if all(getattr(model, name) is None for name in names):
        raise ValueError(f"give at least one of {', '.join(names)}")


def at_least_one_schema(*names: str) -> dict[str, Any]:
    """JSON Schema for :func:`at_least_one`: some field of ``names`` is present as a string."""
    return {"anyOf": [{"required": [name], "properties": {name: {"type": "string"}}}
                      for name in names]}


# Keys outside the pattern are refused, so the schema says so (pydantic leaves it open).
CLOSED_KEYS: dict[str, Any] = {"additionalProperties": False}


class Strict(BaseModel):
    # strict: JSON's types as the schema says (0 is not false, "5" is not 5)
    model_config = ConfigDict(extra="forbid", strict=True)


class Health(BaseModel):
    status: str
