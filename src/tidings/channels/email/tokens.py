"""Signed unsubscribe links, one purpose each (the three links in every mail; RFC 8058 one-click).

A token is ``<Fernet token>.<purpose code>``: the code (hex, as the route's pattern wants: 1
``category``, 2 ``object``, 3 ``all``) names the purpose; the sealed part holds the user, what
to turn off (the category; for ``object`` the id of the event whose object it is, which keeps
tokens short; for ``all`` the mail frequency that undo restores) and a keyed digest of the
address the mail went to, encrypted and authenticated with a key of that purpose alone (derived
from the signing secret). So a token names no user in readable form, a token of one purpose is
refused as another, and a token stops working when the user's address or the signing secret
changes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken

from tidings.config import Config

PURPOSES = ("category", "object", "all")
CODES = {"category": "1", "object": "2", "all": "3"}


class BadLink(ValueError):
    """Not a token we made for this purpose: forged, altered, or of another purpose."""


class StaleLink(ValueError):
    """A token we made, for an address the user no longer has."""


@dataclass(frozen=True)
class Unsubscribe:
    """What a link turns off: ``target`` is the category, the event whose object it is (the
    object once :func:`~tidings.channels.email.links.follow_link` has looked it up), or
    (``all``) the mail frequency to restore on undo."""

    user: str
    purpose: str
    target: str
    address_digest: str


def _fernet(secret: str, purpose: str) -> Fernet:
    key = hmac.new(secret.encode(), f"tidings unsubscribe {purpose}".encode(),
                   hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def address_digest(secret: str, address: str) -> str:
    return hmac.new(secret.encode(), f"address\x00{address.strip().lower()}".encode(),
                    hashlib.sha256).hexdigest()[:24]


def unsubscribe_token(secret: str, user: str, address: str, purpose: str = "all",
                      target: str = "immediate") -> str:
    if purpose not in PURPOSES:
        raise ValueError(f"unknown unsubscribe purpose {purpose!r}")
    payload = json.dumps({"u": user, "t": target, "a": address_digest(secret, address)},
                         separators=(",", ":")).encode()
    return f"{_fernet(secret, purpose).encrypt(payload).decode().rstrip('=')}.{CODES[purpose]}"


def read_unsubscribe_token(secret: str, token: str) -> Unsubscribe:
    """What a token says; raises :class:`BadLink` for one we did not make for its purpose.
    The caller checks the address (:func:`check_address`)."""
    sealed, _, code = token.rpartition(".")
    purpose = next((p for p, c in CODES.items() if c == code), None)
    if purpose is None or not sealed:
        raise BadLink("this unsubscribe link is not valid")
    try:
        data = json.loads(_fernet(secret, purpose).decrypt(sealed + "=" * (-len(sealed) % 4)))
        found = Unsubscribe(str(data["u"]), purpose, str(data["t"]), str(data["a"]))
    except (InvalidToken, ValueError, KeyError, TypeError):
        raise BadLink("this unsubscribe link is not valid") from None
    return found


def check_address(secret: str, link: Unsubscribe, address: object) -> None:
    """Raise :class:`StaleLink` unless the user's address now is the one the link was sent
    to."""
    if not isinstance(address, str) or not hmac.compare_digest(
            address_digest(secret, address), link.address_digest):
        raise StaleLink("this unsubscribe link was sent to an address this account no longer "
                        "uses; use the links in a newer mail, or your preferences")


def signing_secret(config: Config) -> str:
    secret = config.token_secret or (config.api_keys[0] if config.api_keys else None)
    if not secret:
        raise RuntimeError("mail needs TIDINGS_TOKEN_SECRET (or TIDINGS_API_KEY) to sign "
                           "its unsubscribe links")
    return secret
