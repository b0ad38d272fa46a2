"""Minting user tokens."""

from __future__ import annotations

from pydantic import BaseModel, Field

from tidings.api.schemas.common import JsonInt, Strict
from tidings.api.schemas.ids import UserId


class TokenIn(Strict):
    user: UserId
    ttl_seconds: JsonInt = Field(3600, ge=60, le=30 * 86400)


class TokenOut(BaseModel):
    token: str
    expires_at: str
