"""The errors a person can cause at the command line, each said in one line.

A database that cannot be reached or refuses the role or password, a URL that is not one, a
port already taken, a missing setting: :func:`explain` gives the line ``tidings`` prints (exit
code 2) instead of a traceback, or None for a defect, whose traceback stays. ``tidings --debug``
shows the traceback of either.
"""

from __future__ import annotations

import errno
import socket

from tidings.exceptions import TidingsError


class CommandError(Exception):
    """A command cannot go on because of how it was called or configured (the message says
    what to change)."""


def explain(exc: BaseException) -> str | None:
    """The one line that tells the person what went wrong, or None for a defect."""
    if isinstance(exc, CommandError | TidingsError):
        return str(exc)
    module = type(exc).__module__
    if module.startswith("sqlalchemy"):
        return _database(exc)
    return None


def _database(exc: BaseException) -> str | None:
    from sqlalchemy import exc as sa_exc

    if isinstance(exc, sa_exc.ArgumentError):  # not a URL, or an unknown dialect or driver
        return f"the database URL is not valid: {_first_line(exc)}"
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
        cause = exc.orig if isinstance(exc, sa_exc.DBAPIError) and exc.orig else exc
        return f"the database refused or could not be reached: {_first_line(cause)}"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    # psycopg prefixes its message with "connection failed: "; FATAL and the rest say why
    return " ".join(text.splitlines()[0].split())


def check_port(host: str, port: int) -> None:
    """Raise :class:`CommandError` if ``host:port`` cannot be listened on (taken, or an
    address this machine does not have), before the server's processes start."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind(address)
        except OSError as exc:
            why = ("the port is in use by another process (--port to choose another)"
                   if exc.errno == errno.EADDRINUSE else exc.strerror)
            raise CommandError(f"cannot listen on {host}:{port}: {why}") from exc


__all__ = ["CommandError", "check_port", "explain"]
