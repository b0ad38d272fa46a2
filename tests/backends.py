"""Where the test servers are, and what happens when one is missing.

Every backend in the behaviour suite is a real server, found at a default local address or at the
URL in its ``TIDINGS_TEST_*_URL`` variable. :func:`require` is the one rule for a missing server:
locally its tests are skipped with a reason that says how to fix it; in CI (``CI=true``) every
backend is mandatory, so the tests fail instead. Redis, SMTP and browser fixtures use it too::

    require("Redis", redis.Redis.from_url(url).ping, where=url, env="TIDINGS_TEST_REDIS_URL")
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from sqlalchemy.engine import make_url

POSTGRES_ENV = "TIDINGS_TEST_POSTGRES_URL"
MYSQL_ENV = "TIDINGS_TEST_MYSQL_URL"
POSTGRES_DEFAULT = "postgresql://postgres@127.0.0.1:5432"
# PyMySQL, unless told ``ssl_disabled``, builds a TLS context with the system's certificates
# for every connection it opens (about 50-400 ms of CPU each on a CI box), to use only if the
# server offers TLS; the local server is on loopback, and the suite opens thousands.
MYSQL_DEFAULT = "mysql+pymysql://root@127.0.0.1:3306/?ssl_disabled=true"

# name -> None when the check passed, else the reason; each server is probed once per session.
_outcomes: dict[str, str | None] = {}


def in_ci() -> bool:
    """True when running in CI, where a missing backend is an error rather than a skip."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require(
    name: str, check: Callable[[], object], *, where: str = "", env: str | None = None
) -> None:
    """Run ``check`` (which raises if ``name`` is unusable) once per session; if it raised,
    skip the calling test, or fail it when ``CI=true``.

    ``where`` (an address, say) and ``env`` (the variable that moves it) go into the message.
    """
    if name not in _outcomes:
        try:
            check()
        except Exception as exc:
            place = f" at {where}" if where else ""
            fix = f"start it or set {env}" if env else "start it"
            _outcomes[name] = f"{name} not reachable{place}; {fix} ({_first_line(exc)})"
        else:
            _outcomes[name] = None
    reason = _outcomes[name]
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"{reason} [CI=true: every backend is mandatory]", pytrace=False)
    pytest.skip(reason)


def postgres_server() -> str:
    """The PostgreSQL server URL (no database) the tests create their databases on."""
    return os.environ.get(POSTGRES_ENV) or POSTGRES_DEFAULT


def mysql_server() -> str:
    """The MariaDB/MySQL server URL (no database) the tests create their databases on."""
    return os.environ.get(MYSQL_ENV) or MYSQL_DEFAULT


def with_database(server: str, database: str | None) -> str:
    """``server`` with its database part set, keeping the spelling (``postgresql://``…)."""
    return make_url(server).set(database=database).render_as_string(hide_password=False)


def redacted(url: str) -> str:
    """``url`` with any password masked, for messages."""
    return make_url(url).render_as_string(hide_password=True)


def _first_line(exc: BaseException) -> str:
    # SQLAlchemy wraps the driver's error; the driver's own message is the useful part.
    cause = getattr(exc, "orig", None) or exc
    text = str(cause).strip()
    return (text.splitlines()[0] if text else type(cause).__name__)[:200]
