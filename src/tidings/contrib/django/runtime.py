"""The project's one :class:`~tidings.Tidings`, opened on first use, and the user mapping."""

from __future__ import annotations

import threading
import time
from typing import Any

import jwt
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from sqlalchemy import create_engine, make_url, text

from tidings.contrib.django.conf import Options, options
from tidings.domain.events import USER_ID
from tidings.engine import Tidings

_lock = threading.Lock()
_opened: Tidings | None = None


def get_tidings() -> Tidings:
    """The project's tidings (opened once per process, from ``settings.TIDINGS``)."""
    global _opened
    with _lock:
        if _opened is None:
            found = options()
            _opened = Tidings.open(found.database_url, **_settings(found))
        return _opened


def close() -> None:
    """Close the project's tidings (the next use opens it again: tests, settings changes)."""
    global _opened
    with _lock:
        if _opened is not None:
            _opened.close()
            _opened = None


def migrate() -> str:
    """Create or upgrade tidings' schema (making its own database first when it was derived);
    returns the URL migrated, without its password."""
    found = options()
    if found.create_database:
        create_database(found.database_url)
    close()
    Tidings.open(found.database_url, migrate=True, **_settings(found)).close()
    return make_url(found.database_url).render_as_string(hide_password=True)


def create_database(url: str) -> None:
    """Make the database ``url`` names on its server when it is not there (PostgreSQL, MariaDB)."""
    target = make_url(url)
    name = target.database or ""
    if target.get_backend_name() == "postgresql":
        server = create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")
        with server.connect() as conn:
            found = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"),
                                 {"n": name}).first()
            if found is None:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        server.dispose()
    elif target.get_backend_name() in ("mysql", "mariadb"):
        server = create_engine(target.set(database=""), isolation_level="AUTOCOMMIT")
        with server.connect() as conn:
            conn.execute(text(f"CREATE DATABASE IF NOT EXISTS `{name}` "
                              "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"))
        server.dispose()


def user_id(user: Any) -> str:
    """The tidings user id of a Django user: ``TIDINGS['USER_ID']`` (a dotted path to a function
    of the user) or else the user's primary key as text."""
    found = options()
    value = import_string(found.user_id)(user) if found.user_id else str(user.pk)
    if not isinstance(value, str) or not USER_ID.fullmatch(value):
        raise ImproperlyConfigured(f"TIDINGS: {value!r} is not a valid tidings user id "
                                   "(1-255 of A-Z a-z 0-9 _ . : @ -)")
    return value


def username(user: Any) -> str:
    """A ``TIDINGS['USER_ID']`` for sites whose usernames are tidings user ids (titles then say
    "bob commented", not "7 commented"): ``"tidings.contrib.django.username"``."""
    return str(user.get_username())


def mint_token(user: Any) -> tuple[str, int]:
    """A user token for the tidings API (HS256, ``sub`` = the user id) and its expiry, in Unix
    seconds. Needs ``TIDINGS['TOKEN_SECRET']`` — the same secret as the server's
    ``TIDINGS_TOKEN_SECRET``."""
    found = options()
    if not found.token_secret:
        raise ImproperlyConfigured("TIDINGS['TOKEN_SECRET'] is needed to mint user tokens")
    expires = int(time.time()) + found.token_ttl
    token = jwt.encode({"sub": user_id(user), "exp": expires}, found.token_secret,
                       algorithm="HS256")
    return token, expires


def _settings(found: Options) -> dict[str, Any]:
    extra: dict[str, Any] = dict(found.settings)
    if found.types_file:
        extra["types_file"] = found.types_file
    if found.token_secret:
        extra["token_secret"] = found.token_secret
    return extra

