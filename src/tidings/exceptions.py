"""Every error tidings raises on purpose derives from :class:`TidingsError`.

The tree::

    TidingsError
    ├── ConfigError                 bad TIDINGS_* setting or types file
    ├── InvalidInput                the caller sent something unusable (maps to 4xx)
    │   ├── UnknownEventType        the event names a type nobody declared
    │   ├── InvalidUserId           not 1-255 characters of [A-Za-z0-9_.:@-]
    │   ├── PayloadTooLarge         payload over the configured size
    │   ├── TooManyRecipients       more explicit recipients than allowed
    │   ├── InvalidCursor           a cursor this server did not make
    │   ├── InvalidText             a string holding NUL or a lone surrogate, which no store
    │   │                           keeps as it is (PostgreSQL refuses NUL in text)
    │   ├── UnknownQueryField       a list or count narrowed by a payload field no type marks
    │   │                           queryable (maps to 400, like an unknown query parameter)
    │   └── InvalidEventType        an event type declaration that does not hold together
    ├── NotFound                    the named thing does not exist
    ├── IdempotencyConflict         same idempotency key, different body
    ├── QuotaExceeded               a user holds as much of something as a site allows
    │                               (subscriptions; maps to 409)
    ├── StoreUnavailable            a backend cannot serve now: unreachable, too busy, timed
    │   │                           out (maps to 503; try again later)
    │   └── HotStoreEmptied         the Redis hot store lost its data (emptied, replaced): it
    │                               answers 503 until ``tidings rebuild-hot-store`` refilled it
    ├── StoreRejected               the store refused a value (NUL in PostgreSQL text, a number
    │                               out of its column's range; maps to 422)
    ├── StoreConflict               a write lost a race on a unique key (retried by the caller)
    ├── LeaseLost                   a job's lease passed to another worker; its unit rolls back
    ├── SchemaOutOfDate             the database needs ``tidings migrate``
    ├── JobError                    a job handler failed (retried by the worker)
    └── ApiError                    the HTTP API answered an error (``tidings.client_base``,
                                    raised by :mod:`tidings.client`)

Each :class:`InvalidInput` names the offending ``field`` so an API can point at it.
"""

from __future__ import annotations


class TidingsError(Exception):
    """Root of every error tidings raises on purpose."""

    code = "tidings_error"


class ConfigError(TidingsError):
    """A setting or a types file is missing or malformed."""

    code = "config_error"


class InvalidInput(TidingsError):
    """The caller's input cannot be used; nothing was written."""

    code = "invalid_input"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnknownQueryField(InvalidInput):
    """A list or count narrowed by a payload field that no type marks ``queryable``."""


class UnknownEventType(InvalidInput):
    code = "unknown_event_type"


class InvalidUserId(InvalidInput):
    code = "invalid_user_id"


class PayloadTooLarge(InvalidInput):
    code = "payload_too_large"


class TooManyRecipients(InvalidInput):
    code = "too_many_recipients"


class InvalidCursor(InvalidInput):
    code = "invalid_cursor"


class InvalidText(InvalidInput):
    """A string holds NUL (U+0000) or a lone surrogate: refused as it comes in, on every
    backend alike, so nothing accepted fails later where a store cannot keep it."""


class InvalidEventType(InvalidInput):
    code = "invalid_event_type"


class NotFound(TidingsError):
    code = "not_found"


class LinkExpired(TidingsError):
    """A link we made that no longer applies (an unsubscribe link sent to an address the user
    has since changed): HTTP 410."""

    code = "link_expired"


class IdempotencyConflict(TidingsError):
    """The idempotency key was used before with a different body."""

    code = "idempotency_conflict"


class QuotaExceeded(TidingsError):
    """The user already holds as many of these as the site allows (``TIDINGS_MAX_*``);
    nothing was written. Removing one makes room."""

    code = "quota_exceeded"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class StoreUnavailable(TidingsError):
    """A backend is down or unreachable; try again later."""

    code = "store_unavailable"


class HotStoreEmptied(StoreUnavailable):
    """The Redis hot store lost its data (emptied, restarted without persistence, replaced):
    it refuses reads and writes until ``tidings rebuild-hot-store`` has refilled it."""


class StoreConflict(TidingsError):
    """A write collided with a concurrent one on a unique key; the unit was rolled back."""

    code = "conflict"


class LeaseLost(TidingsError):
    """Another worker took this job after its lease ran out; this run's writes roll back."""

    code = "lease_lost"


class StoreRejected(TidingsError):
    """The store refused a value of the request (a data error); nothing was written.

    The caller's input is at fault, not the store: retrying the same request fails again.
    """

    code = "invalid_input"


class SchemaOutOfDate(TidingsError):
    """The database schema is not at the version this code needs."""

    code = "schema_out_of_date"


class JobError(TidingsError):
    code = "job_error"


__all__ = [
    "ConfigError",
    "HotStoreEmptied",
    "IdempotencyConflict",
    "InvalidCursor",
    "InvalidEventType",
    "InvalidInput",
    "InvalidText",
    "InvalidUserId",
    "JobError",
    "NotFound",
    "PayloadTooLarge",
    "QuotaExceeded",
    "SchemaOutOfDate",
    "StoreRejected",
    "StoreUnavailable",
    "TidingsError",
    "TooManyRecipients",
    "UnknownEventType",
]
