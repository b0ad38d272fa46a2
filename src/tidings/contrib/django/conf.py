"""The ``TIDINGS`` setting of a Django project, and the store URL it names or implies.

Without ``DATABASE_URL``, tidings uses the server of Django's ``default`` database but keeps a
database of its own there (SQLite: a file beside Django's, ``<name>.tidings.sqlite3``;
PostgreSQL and MariaDB: a database ``<name>_tidings`` on the same server, created by
``manage.py migrate`` when missing). tidings migrates its schema with its own migrations
(Alembic), so its tables never meet Django's migration graph or a model's table name, it can be
backed up, restored or moved to its own server on its own, and no ``search_path`` trick is needed
(one that a connection pooler in transaction mode would break).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

_KNOWN = {"DATABASE_URL", "TYPES_FILE", "TOKEN_SECRET", "SERVER_URL", "USER_ID", "TOKEN_TTL",
          "SETTINGS", "ERASE_ON_DELETE"}


@dataclass(frozen=True)
class Options:
    """What the project configured, checked."""

    database_url: str
    types_file: str | None
    token_secret: str | None
    server_url: str  # where browsers reach the tidings API (the bell's ``api``)
    user_id: str | None  # dotted path of a callable user -> tidings user id
    token_ttl: int
    erase_on_delete: bool
    settings: dict[str, Any]  # further Config fields (``Tidings.open``'s keyword settings)
    create_database: bool  # the URL was derived: make its database when missing


def options() -> Options:
    raw = getattr(settings, "TIDINGS", {})
    if not isinstance(raw, dict):
        raise ImproperlyConfigured("TIDINGS must be a dict")
    unknown = sorted(set(raw) - _KNOWN)
    if unknown:
        raise ImproperlyConfigured(f"TIDINGS: unknown keys {unknown}; known: {sorted(_KNOWN)}")
    url = raw.get("DATABASE_URL")
    ttl = raw.get("TOKEN_TTL", 3600)
    if not isinstance(ttl, int) or ttl <= 0:
        raise ImproperlyConfigured("TIDINGS['TOKEN_TTL'] must be a positive number of seconds")
    extra = raw.get("SETTINGS", {})
    if not isinstance(extra, dict):
        raise ImproperlyConfigured("TIDINGS['SETTINGS'] must be a dict of tidings settings")
    return Options(
        database_url=url or derived_url(settings.DATABASES["default"]),
        types_file=raw.get("TYPES_FILE"),
        token_secret=raw.get("TOKEN_SECRET"),
        server_url=str(raw.get("SERVER_URL", "/notifications")).rstrip("/"),
        user_id=raw.get("USER_ID"),
        token_ttl=ttl,
        erase_on_delete=bool(raw.get("ERASE_ON_DELETE", True)),
        settings=dict(extra),
        create_database=not url,
    )


def derived_url(db: dict[str, Any]) -> str:
    """A URL for tidings' own database beside Django's ``default`` one."""
    engine = str(db.get("ENGINE", ""))
    name = str(db.get("NAME", ""))
    if engine.endswith("sqlite3"):
        if not name or name == ":memory:" or name.startswith("file:"):
            raise ImproperlyConfigured(
                "TIDINGS: Django's database is an in-memory SQLite; set TIDINGS['DATABASE_URL']")
        base = name[:-len(".sqlite3")] if name.endswith(".sqlite3") else name
        return f"sqlite:///{base}.tidings.sqlite3"
    if "postgresql" in engine:
        scheme = "postgresql+psycopg"
    elif "mysql" in engine:
        scheme = "mysql+pymysql"
    else:
        raise ImproperlyConfigured(
            f"TIDINGS: no embedded default for {engine!r}; set TIDINGS['DATABASE_URL']")
    user = quote(str(db.get("USER") or ""), safe="")
    password = quote(str(db.get("PASSWORD") or ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = str(db.get("HOST") or "127.0.0.1")
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"{scheme}://{auth}{host}{port}/{name}_tidings"
