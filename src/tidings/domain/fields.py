"""Queryable payload fields: top-level scalar fields of an event's payload that a type marks
``queryable``, so an inbox list or unread count can be narrowed by them (Jiepang's "any field
the type marks as queryable").

Every store keeps them as text, written with the notification when it is delivered, and
compares them as text: a string is itself, a number its JSON form (``5``, ``2.5``), a boolean
``true`` / ``false``. A field that is absent, null, an object, a list, or a string longer than
:data:`VALUE_LIMIT` is not kept, so no condition on it matches.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tidings.exceptions import InvalidInput, UnknownQueryField

FIELD_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # whole string: fullmatch
FIELDS_LIMIT = 8  # queryable fields per type
VALUE_LIMIT = 255  # characters of a kept value

Fields = tuple[tuple[str, str], ...]  # (name, value as text), sorted by name


def value_text(value: Any) -> str | None:
    """A payload value as the text stores keep and compare, or None when it is not kept."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return value if len(value) <= VALUE_LIMIT else None
    return None


def extract(names: Sequence[str], payload: Mapping[str, Any]) -> Fields:
    """The kept values of the fields ``names`` in ``payload``."""
    found: list[tuple[str, str]] = []
    for name in sorted(set(names)):
        text = value_text(payload.get(name))
        if text is not None:
            found.append((name, text))
    return tuple(found)


def check_names(names: Any) -> str | None:
    """Why a type's ``queryable`` list is not valid, or None when it is."""
    if not isinstance(names, tuple) or not all(isinstance(n, str) for n in names):
        return "queryable must be a list of payload field names"
    if len(names) > FIELDS_LIMIT:
        return f"queryable names at most {FIELDS_LIMIT} fields"
    for name in names:
        if not FIELD_NAME.fullmatch(name):
            return (f"queryable field {name[:64]!r} must be 1-64 characters of "
                    "[A-Za-z0-9_-] (a top-level payload field)")
    return None


def conditions(asked: Mapping[str, Any]) -> Fields:
    """Conditions on queryable fields as stores compare them: ``{"lang": "de", "rank": 5}``
    (a query string gives text; a library caller may give numbers and booleans)."""
    found: list[tuple[str, str]] = []
    for name, value in asked.items():
        where = f"payload.{name}"
        if not isinstance(name, str) or not FIELD_NAME.fullmatch(name):
            raise UnknownQueryField(f"{where[:80]}: a payload field name is 1-64 characters of "
                               "[A-Za-z0-9_-]", field=where[:80])
        text = value_text(value)
        if text is None:
            raise InvalidInput(f"{where}: the value must be text of at most {VALUE_LIMIT} "
                               "characters, a number or a boolean", field=where)
        found.append((name, text))
    return tuple(sorted(found))
