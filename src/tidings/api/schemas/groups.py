"""Group membership, for types whose privacy rule is ``group:NAME``."""

from __future__ import annotations

from pydantic import BaseModel


class Membership(BaseModel):
    group: str
    user: str
    member: bool


class MemberOut(BaseModel):
    user: str
    since: str


class MemberPage(BaseModel):
    items: list[MemberOut]
    next_cursor: str | None
