"""The pattern of every id and name the API takes, defined once here and used by path
parameters, query parameters and bodies alike.

Each is published in ``/openapi.json`` as ``^…$``. JSON Schema (ECMA-262) and the Rust regex
engine pydantic checks with both read ``$`` (no multiline flag) as the very end of the text, so
``"alice\\n"`` is refused. Python's :mod:`re` does not: there ``$`` also matches before a final
newline. Checks written in Python therefore use :func:`matches` (``re.fullmatch`` on the bare
pattern), never ``re.match`` with ``$``.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Annotated

from pydantic import StringConstraints

# Control characters and spaces, spelt out: ``\s`` differs between the server's regex engine
# (Rust: Unicode White_Space, U+0085 too) and JSON Schema's (ECMA-262: U+FEFF too, U+0085
# not), so a pattern with ``\s`` would publish another rule than the one it checks.
INVISIBLE = r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
VISIBLE = rf"[^{INVISIBLE}]"
NOT_AT = rf"[^@{INVISIBLE}]"
# C0 controls and DEL: never part of a key, a name or a reason (and PostgreSQL refuses NUL).
NO_CONTROL = r"[^\x00-\x1f\x7f]"

USER_ID_BARE = r"[A-Za-z0-9_.:@-]{1,255}"
TYPE_NAME_BARE = r"[A-Za-z0-9_.:-]{1,64}"
GROUP_NAME_BARE = r"[A-Za-z0-9_.:-]{1,64}"
# 1-255 characters, no control characters (what the engine's ``check_object`` accepts)
OBJECT_KEY_BARE = r"[^\x00-\x1f]{1,255}"
# Ids are BIGINT row ids, never 0; 18 digits keep every value below 2**63.
ROW_ID_BARE = r"[1-9][0-9]{0,17}"
MAX_ROW_ID = 2**63 - 1  # the largest id a number parameter (``max_id``, ``since_id``) takes
# Cursors are opaque, made of URL-safe characters (RFC 3986's unreserved set).
CURSOR_BARE = r"[A-Za-z0-9_.~-]{1,200}"
UNSUBSCRIBE_TOKEN_BARE = r"[A-Za-z0-9_-]+\.[0-9a-f]+"
IDEMPOTENCY_KEY_BARE = rf"{NO_CONTROL}{{1,255}}"
REASON_BARE = rf"{NO_CONTROL}*"
LOCALE_NAME_BARE = r"[a-z]{2,3}(_[A-Z]{2})?"
LOCALE_TAG_BARE = r"[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?"
TYPES_LIST_BARE = r"[A-Za-z0-9_.:,-]*"
EMAIL_BARE = rf"{NOT_AT}{{1,64}}@[A-Za-z0-9.-]{{1,189}}\.[A-Za-z]{{2,63}}"
BOUNCE_ADDRESS_BARE = rf"{NOT_AT}+@{NOT_AT}+"
WEBHOOK_URL_BARE = rf"https?://{VISIBLE}+"
# a type's label and description: one line, no control characters (as domain.types checks)
ONE_LINE = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]"
LABEL_BARE = rf"{ONE_LINE}{{1,80}}"
DESCRIPTION_BARE = rf"{ONE_LINE}{{1,200}}"
# a queryable payload field: top-level, as tidings.domain.fields checks
PAYLOAD_FIELD_BARE = r"[A-Za-z0-9_-]{1,64}"
# a type's privacy rule, as tidings.domain.privacy reads it
PRIVACY_BARE = rf"(followers|(group|rule):{GROUP_NAME_BARE})"


def anchored(bare: str) -> str:
    """The published form of a pattern: the whole text must match."""
    return f"^{bare}$"


USER_ID = anchored(USER_ID_BARE)
TYPE_NAME = anchored(TYPE_NAME_BARE)
GROUP_NAME = anchored(GROUP_NAME_BARE)
OBJECT_KEY = anchored(OBJECT_KEY_BARE)
ROW_ID = anchored(ROW_ID_BARE)
CURSOR = anchored(CURSOR_BARE)
UNSUBSCRIBE_TOKEN = anchored(UNSUBSCRIBE_TOKEN_BARE)
IDEMPOTENCY_KEY = anchored(IDEMPOTENCY_KEY_BARE)
REASON = anchored(REASON_BARE)
LOCALE_NAME = anchored(LOCALE_NAME_BARE)
LOCALE_TAG = anchored(LOCALE_TAG_BARE)
TYPES_LIST = anchored(TYPES_LIST_BARE)
# a comma-separated list of reasons' names (tidings.domain.flags.REASONS)
_REASON = "(recipient|mention|subscribed|following|group)"
REASONS_LIST = anchored(rf"{_REASON}(,{_REASON})*")
EMAIL = anchored(EMAIL_BARE)
BOUNCE_ADDRESS = anchored(BOUNCE_ADDRESS_BARE)
WEBHOOK_URL = anchored(WEBHOOK_URL_BARE)
LABEL = anchored(LABEL_BARE)
DESCRIPTION = anchored(DESCRIPTION_BARE)
PAYLOAD_FIELD = anchored(PAYLOAD_FIELD_BARE)
PRIVACY = anchored(PRIVACY_BARE)


@cache
def _compiled(bare: str) -> re.Pattern[str]:
    return re.compile(bare)


def matches(bare: str, value: object) -> bool:
    """True if all of ``value`` (a string) matches the bare pattern ``bare``."""
    return isinstance(value, str) and _compiled(bare).fullmatch(value) is not None


UserId = Annotated[str, StringConstraints(pattern=USER_ID)]
TypeName = Annotated[str, StringConstraints(pattern=TYPE_NAME)]
ObjectKey = Annotated[str, StringConstraints(pattern=OBJECT_KEY)]
NotificationId = Annotated[str, StringConstraints(pattern=ROW_ID)]
LocaleName = Annotated[str, StringConstraints(pattern=LOCALE_NAME)]
LocaleTag = Annotated[str, StringConstraints(pattern=LOCALE_TAG)]
IdempotencyKey = Annotated[str, StringConstraints(min_length=1, max_length=255,
                                                  pattern=IDEMPOTENCY_KEY)]
