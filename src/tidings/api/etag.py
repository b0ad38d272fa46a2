"""``ETag`` and ``If-None-Match`` on the reads clients poll (the inbox list, the unread count):
a poll that finds nothing new is answered ``304 Not Modified`` with no body.

The tag is a hash of the body the read produced (strong: byte for byte the same body), so it
changes with anything the answer shows (an item, its read or seen state, a count) and costs a
hash of a few kilobytes; the read itself still happens, the answer is what is saved.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from starlette.responses import Response

JSON = "application/json"


def entity_tag(body: bytes) -> str:
    """The strong entity tag of ``body``."""
    return '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'


def none_match(header: str | None, tag: str) -> bool:
    """Whether ``If-None-Match: header`` names ``tag`` (weak comparison, as RFC 9110 asks
    for this header: ``W/"x"`` matches ``"x"``), or is ``*``."""
    if header is None:
        return False
    if header.strip() == "*":
        return True
    bare = tag.removeprefix("W/")
    return any(candidate.strip().removeprefix("W/") == bare
               for candidate in header.split(","))


def if_none_match(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The request's ``If-None-Match`` from its raw ASGI headers (all of them joined)."""
    found = [value.decode("latin-1") for key, value in headers if key == b"if-none-match"]
    return ", ".join(found) if found else None


def conditional(body: bytes, header: str | None, media_type: str = JSON) -> Response:
    """``body`` with its ``ETag``, or ``304`` (no body, the same ``ETag``) when the request's
    ``If-None-Match`` (``header``) names it."""
    tag = entity_tag(body)
    if none_match(header, tag):
        return Response(status_code=304, headers={"ETag": tag})
    return Response(body, media_type=media_type, headers={"ETag": tag})
