"""Web Push: a browser's PushSubscription, as ``PushSubscription.toJSON()`` gives it."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from tidings.api.schemas.common import Strict
from tidings.api.schemas.ids import WEBHOOK_URL

# base64url (unpadded or padded) of an uncompressed P-256 point (65 bytes, 0x04 first) and of
# the 16-byte auth secret
P256DH = r"^B[A-P][A-Za-z0-9_-]{85}=?$"
AUTH = r"^[A-Za-z0-9_-]{21}[AQgw](==)?$"


class PushKeys(Strict):
    p256dh: Annotated[str, StringConstraints(pattern=P256DH)] = Field(
        description="The browser's P-256 public key (uncompressed point, base64url).")
    auth: Annotated[str, StringConstraints(pattern=AUTH)] = Field(
        description="The 16-byte authentication secret (base64url).")


class PushSubscriptionIn(Strict):
    endpoint: Annotated[str, StringConstraints(max_length=2048, pattern=WEBHOOK_URL)] = Field(
        description="The push service's URL for this browser; private and loopback "
                    "addresses are refused unless the operator allows them "
                    "(`TIDINGS_WEBHOOK_ALLOW`).")
    expirationTime: float | None = Field(None, description="As the browser gives it; unused.")
    keys: PushKeys


class PushSubscriptionOut(BaseModel):
    id: str
    endpoint: str
    created_at: str


class PushSubscriptionList(BaseModel):
    items: list[PushSubscriptionOut]


class PublicKey(BaseModel):
    public_key: str = Field(description="The VAPID public key (uncompressed P-256 point, "
                            "base64url): `applicationServerKey` for `pushManager.subscribe`.")
