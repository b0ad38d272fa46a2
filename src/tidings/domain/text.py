"""Text no store keeps as it is: NUL and lone surrogates.

PostgreSQL refuses NUL (U+0000) in text and in JSON it indexes, and no UTF-8 encoder writes a
lone surrogate (U+D800-U+DFFF, which JSON text may spell as ``"\\ud800"``). A string holding
either is refused where it comes in — the HTTP API's door and the library's calls alike — so
nothing accepted fails later, in a fan-out or a mail job, where nobody can be told.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tidings.exceptions import InvalidText

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def why(char: str) -> str:
    """What is wrong with a string holding ``char`` (one :data:`UNSTORABLE` character)."""
    if char == "\x00":
        return "holds a NUL character (U+0000), which cannot be stored"
    return f"holds a lone surrogate (U+{ord(char):04X}), which is not valid Unicode"


def find(value: Any, field: str) -> tuple[str, str] | None:
    """The first string in ``value`` (a JSON-like value: its strings, the keys and members
    of its mappings and lists) that holds an unstorable character, as (field path, what is
    wrong); the path starts at ``field`` (``payload.items.0.text``). Without recursion."""
    stack: list[tuple[Any, str]] = [(value, field)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if found := UNSTORABLE.search(item):
                return path, why(found.group())
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if isinstance(key, str) and (found := UNSTORABLE.search(key)):
                    return path, f"has a key that {why(found.group())}"
                stack.append((child, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}.{index}") for index, child in enumerate(item))
    return None


def check_text(value: Any, field: str, *, whole: str | None = None) -> None:
    """Raise :class:`InvalidText` naming the field if any string in ``value`` holds NUL or a
    lone surrogate. ``field`` may be empty (paths then start at ``value``'s keys); ``whole``
    names ``value`` itself where the path is empty."""
    found = find(value, field)
    if found is not None:
        path, message = found
        name = path or whole or field
        raise InvalidText(f"{name} {message}", field=name)
