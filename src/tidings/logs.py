"""Log lines that say which request or job they belong to, as text or JSON.

The HTTP layer sets the request's id (:func:`request_scope`) and the worker the id of the job
it runs (:func:`job_scope`) in context variables; :class:`ContextFilter` puts them on every
record logged meanwhile — by tidings, SQLAlchemy, httpx, any library — as ``request_id`` and
``job_id`` (``job_ids`` for a batch). :func:`configure` installs the handler ``tidings serve``
and ``tidings worker`` log through: JSON lines (python-json-logger) keep the record's extra
fields and its traceback (``exc_info``), so a 500's error id leads to its stack.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

request_id: ContextVar[str | None] = ContextVar("tidings_request_id", default=None)
job_ids: ContextVar[tuple[int, ...]] = ContextVar("tidings_job_ids", default=())

# JSON keys of the standard record fields
RENAMED = {"asctime": "time", "levelname": "level", "name": "logger"}


@contextlib.contextmanager
def request_scope(value: str) -> Iterator[None]:
    """Records logged in this block (and the tasks and threads it starts) carry ``value``
    as their ``request_id``."""
    token = request_id.set(value)
    try:
        yield
    finally:
        request_id.reset(token)


@contextlib.contextmanager
def job_scope(ids: Sequence[int]) -> Iterator[None]:
    """Records logged in this block carry the job's id (``job_id``), or a batch's
    (``job_ids``)."""
    token = job_ids.set(tuple(ids))
    try:
        yield
    finally:
        job_ids.reset(token)


class ContextFilter(logging.Filter):
    """Puts the current request id and job id(s) on each record that has none."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            current = request_id.get()
            if current is not None:
                record.request_id = current
        ids = job_ids.get()
        if len(ids) == 1 and not hasattr(record, "job_id"):
            record.job_id = ids[0]
        elif len(ids) > 1 and not hasattr(record, "job_ids"):
            record.job_ids = list(ids)
        return True


def handler(json_lines: bool, stream: object = None) -> logging.Handler:
    """A handler to standard error (or ``stream``) writing text, or one JSON object a line."""
    out = logging.StreamHandler(stream or sys.stderr)  # type: ignore[arg-type]
    if json_lines:
        from pythonjsonlogger.json import JsonFormatter

        out.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                       rename_fields=RENAMED))
    else:
        out.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    out.addFilter(ContextFilter())
    return out


def configure(json_lines: bool) -> None:
    """Log INFO and above to standard error through :func:`handler`."""
    logging.basicConfig(level=logging.INFO, handlers=[handler(json_lines)], force=True)


__all__ = ["ContextFilter", "configure", "handler", "job_ids", "job_scope", "request_id",
           "request_scope"]
