"""Bounce reports."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, StringConstraints

from tidings.api.schemas.common import Strict
from tidings.api.schemas.ids import BOUNCE_ADDRESS, REASON


class BounceIn(Strict):
    address: Annotated[str, StringConstraints(min_length=3, max_length=254,
                                              pattern=BOUNCE_ADDRESS)]
    reason: Annotated[str, StringConstraints(max_length=255, pattern=REASON)] = "hard bounce"


class Bounce(BaseModel):
    address: str
    bounced: bool
