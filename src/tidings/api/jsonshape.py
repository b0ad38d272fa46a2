"""Limits on the shape of JSON a caller sends, and JSON encoding that any stored value
survives.

Python's parser recurses (a body nested some thousand levels deep raises ``RecursionError``),
JSON text may spell lone surrogates (``"\\ud800"``) that no UTF-8 encoder takes and NULs
(``"\\u0000"``) that PostgreSQL keeps in no text (:mod:`tidings.domain.text`), and an
encoder that recurses fails on values nested deeper than it allows. So bodies are bounded at
the door (:func:`problem`), and answers are encoded by :func:`dumps`, which falls back to an
encoder without recursion.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel
from starlette.responses import Response

from tidings.domain.text import UNSTORABLE, why

_PATH_SHOWN = 4  # segments of a field path an error names before "…"


def _name(path: list[str]) -> str:
    shown = ".".join(path[:_PATH_SHOWN])
    return shown + ("…" if len(path) > _PATH_SHOWN else "") if shown else "body"


def problem(value: Any, max_depth: int) -> tuple[str, str] | None:
    """The first field of a parsed body that nests deeper than ``max_depth`` or holds a NUL or
    a lone surrogate, as (field path, what is wrong); None if there is none."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            found = UNSTORABLE.search(item)
            if found:
                return _name(path), why(found.group())
            continue
        if not isinstance(item, dict | list):
            continue
        if len(path) >= max_depth:
            return _name(path), f"nests deeper than {max_depth} levels"
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            if isinstance(key, str) and (found := UNSTORABLE.search(key)):
                return _name([*path, "(a key)"]), why(found.group())
            stack.append((child, [*path, str(key)]))
    return None


def could_have_problem(body: bytes, max_depth: int) -> bool:
    """A cheap test: False means :func:`problem` has nothing to find in ``body``."""
    # how NUL or a surrogate can be spelt in UTF-8; a zero byte: a UTF-16 or UTF-32 body
    # (the parser reads those too), whose escapes this test cannot see
    escapes = b"\\u" in body or b"\xed" in body or b"\x00" in body
    return escapes or body.count(b"[") + body.count(b"{") > max_depth


# what the standard encoder raises for a value only :func:`iterencode` writes
NOT_STANDARD = (RecursionError, ValueError, TypeError, UnicodeEncodeError)


def standard_dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON by the standard encoder; raises :data:`NOT_STANDARD`
    where only :func:`dumps`' fallback can write it. The JSON of a list or object is its
    members' ``standard_dumps`` joined, so a part may be encoded apart and kept."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON; values too deep for the standard encoder, holding lone
    surrogates or non-finite numbers are still encoded (by :func:`iterencode`)."""
    try:
        return standard_dumps(value)
    except NOT_STANDARD:
        return "".join(iterencode(value)).encode("ascii")


class SafeJSONResponse(Response):
    """A JSON answer encoded by :func:`dumps`: for pages holding stored payloads, which may
    predate the door's limits (they bypass FastAPI's encoder, which recurses)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def shaped(model: type[BaseModel], data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with exactly the fields ``model`` declares (what a response model would keep)."""
    return {name: data[name] for name in model.model_fields}


def iterencode(value: Any) -> Iterator[str]:
    """JSON text of ``value`` without recursion: ASCII only (lone surrogates as ``\\ud800``
    escapes), non-finite numbers as null, other objects as their text."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Token):
            yield item.text
        elif isinstance(item, dict):
            yield "{"
            entries = list(item.items())
            stack.append(_Token("}"))
            for index in range(len(entries) - 1, -1, -1):
                key, child = entries[index]
                stack.append(child)
                stack.append(_Token(("," if index else "") + json.dumps(str(key)) + ":"))
        elif isinstance(item, list | tuple):
            yield "["
            stack.append(_Token("]"))
            for index in range(len(item) - 1, -1, -1):
                stack.append(item[index])
                if index:
                    stack.append(_Token(","))
        elif item is None or isinstance(item, bool | int):
            yield json.dumps(item)
        elif isinstance(item, float):
            yield json.dumps(item) if math.isfinite(item) else "null"
        else:
            yield json.dumps(item if isinstance(item, str) else str(item))


class _Token:
    """Punctuation waiting on the encoder's stack."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text
