"""All settings in one place: ``TIDINGS_*`` environment variables, typed and checked at start-up."""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tidings.domain.links import is_origin
from tidings.exceptions import ConfigError

TIMELINE_MODELS = ("push", "pull", "hybrid")  # tidings.domain.timeline.MODELS


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def _list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in env.get(name, "").split(",") if part.strip())


def _origins(env: Mapping[str, str], name: str) -> tuple[str, ...] | None:
    origins = _list(env, name)
    for origin in origins:
        if not is_origin(origin):
            raise ConfigError(f"{name}: {origin!r} is not an origin; write scheme://host[:port] "
                              "(http or https, no path), comma-separated")
    return origins or None


def _cors_origins(env: Mapping[str, str]) -> tuple[str, ...]:
    """``TIDINGS_CORS_ORIGINS``: ``*`` (the default: bearer tokens, no cookies, so any page
    may embed the bell) or the origins allowed, comma-separated."""
    if _list(env, "TIDINGS_CORS_ORIGINS") == ("*",):
        return ("*",)
    return _origins(env, "TIDINGS_CORS_ORIGINS") or ("*",)


def _float(env: Mapping[str, str], name: str, default: float, *,
           zero: bool = False) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if value < 0 or (value == 0 and not zero) or value != value:
        raise ConfigError(f"{name} must be {'0 or more' if zero else 'positive'}, got {value}")
    return value


@dataclass(frozen=True)
class Config:
    """Every setting tidings reads. Build with :meth:`from_env` or directly in code."""

    database_url: str = "sqlite:///./tidings.db"
    hot_store_url: str | None = None
    types_file: str | None = None
    api_keys: tuple[str, ...] = ()
    token_secret: str | None = None
    rate_limit: float = 1000.0
    user_rate_limit: float = 20.0  # requests a second per user token (0: no limit)
    stream_write_timeout: float = 10.0
    smtp_url: str | None = None
    mail_from: str = "tidings <tidings@localhost>"
    public_url: str = "http://127.0.0.1:8000"
    email_window_seconds: float = 4 * 3600.0
    email_daily_cap: int = 25
    digest_skip_read: bool = True
    webhook_secret: str | None = None
    webhook_allow: tuple[str, ...] = ()
    webhook_connect_timeout: float = 3.0
    webhook_read_timeout: float = 5.0
    webhook_concurrency: int = 4
    webhook_host_concurrency: int = 2
    vapid_private_key: str | None = None  # Web Push: PEM, or the raw key in base64url
    vapid_subject: str = "mailto:tidings@localhost"
    max_payload_bytes: int = 64 * 1024
    max_recipients: int = 1000
    max_preferences_bytes: int = 64 * 1024  # a user's preferences as JSON
    max_preference_categories: int = 1000  # categories with channel switches
    max_subscriptions: int = 10_000  # per user; 0: no limit
    max_header_bytes: int = 32 * 1024  # request line and headers (HTTP)
    # origins absolute notification links may point to; None: any http(s) origin
    link_origins: tuple[str, ...] | None = None
    # origins whose pages may call the API from a browser (CORS); ("*",): any page
    cors_origins: tuple[str, ...] = ("*",)
    chunk_size: int = 5000
    inbox_cap: int = 10_000
    timeline_cap: int = 800
    timeline_model: str = "push"
    celebrity_followers: int = 5000
    retention_days: int = 365
    lease_seconds: float = 60.0
    job_max_attempts: int = 8
    job_backoff_seconds: float = 2.0
    ready_timeout: float = 3.0
    # seconds the SQL store waits (tidings.store.sql.core.timeouts): to connect, for a statement
    # (the client waits a second longer for its answer; 0: no limit), for a pooled connection
    db_connect_timeout: float = 5.0
    db_statement_timeout: float = 30.0
    db_pool_timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.timeline_model not in TIMELINE_MODELS:
            raise ConfigError("TIDINGS_TIMELINE_MODEL must be push, pull or hybrid, got "
                              f"{self.timeline_model!r}")
        if self.webhook_secret and self.webhook_secret.startswith("whsec_"):
            try:  # the Standard Webhooks form: channels/webhook.py signing_key
                encoded = self.webhook_secret[6:]
                key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
            except (binascii.Error, ValueError):
                key = b""
            if not key:
                raise ConfigError("TIDINGS_WEBHOOK_SECRET: a whsec_ secret must be whsec_ "
                                  "followed by base64")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Config:
        env = os.environ if env is None else env
        config = cls(
            database_url=env.get("TIDINGS_DATABASE_URL") or cls.database_url,
            hot_store_url=env.get("TIDINGS_HOT_STORE_URL") or None,
            types_file=env.get("TIDINGS_TYPES_FILE") or None,
            api_keys=_list(env, "TIDINGS_API_KEY"),
            token_secret=env.get("TIDINGS_TOKEN_SECRET") or None,
            rate_limit=_float(env, "TIDINGS_RATE_LIMIT", cls.rate_limit),
            user_rate_limit=_float(env, "TIDINGS_USER_RATE_LIMIT", cls.user_rate_limit,
                                   zero=True),
            stream_write_timeout=_float(env, "TIDINGS_STREAM_WRITE_TIMEOUT",
                                        cls.stream_write_timeout),
            smtp_url=env.get("TIDINGS_SMTP_URL") or None,
            mail_from=env.get("TIDINGS_MAIL_FROM") or cls.mail_from,
            public_url=(env.get("TIDINGS_PUBLIC_URL") or cls.public_url).rstrip("/"),
            email_window_seconds=_float(env, "TIDINGS_EMAIL_WINDOW_SECONDS",
                                        cls.email_window_seconds),
            email_daily_cap=_int(env, "TIDINGS_EMAIL_DAILY_CAP", cls.email_daily_cap, 1),
            digest_skip_read=env.get("TIDINGS_DIGEST_SKIP_READ", "1") not in ("0", "false"),
            webhook_secret=env.get("TIDINGS_WEBHOOK_SECRET") or None,
            webhook_allow=_list(env, "TIDINGS_WEBHOOK_ALLOW"),
            vapid_private_key=env.get("TIDINGS_VAPID_PRIVATE_KEY") or None,
            vapid_subject=env.get("TIDINGS_VAPID_SUBJECT") or cls.vapid_subject,
            webhook_connect_timeout=_float(env, "TIDINGS_WEBHOOK_CONNECT_TIMEOUT",
                                           cls.webhook_connect_timeout),
            webhook_read_timeout=_float(env, "TIDINGS_WEBHOOK_READ_TIMEOUT",
                                        cls.webhook_read_timeout),
            webhook_concurrency=_int(env, "TIDINGS_WEBHOOK_CONCURRENCY",
                                     cls.webhook_concurrency, 0),
            webhook_host_concurrency=_int(env, "TIDINGS_WEBHOOK_HOST_CONCURRENCY",
                                          cls.webhook_host_concurrency, 1),
            max_payload_bytes=_int(env, "TIDINGS_MAX_PAYLOAD_BYTES", cls.max_payload_bytes, 1),
            max_recipients=_int(env, "TIDINGS_MAX_RECIPIENTS", cls.max_recipients, 1),
            max_preferences_bytes=_int(env, "TIDINGS_MAX_PREFERENCES_BYTES",
                                       cls.max_preferences_bytes, 1024),
            max_preference_categories=_int(env, "TIDINGS_MAX_PREFERENCE_CATEGORIES",
                                           cls.max_preference_categories, 1),
            max_subscriptions=_int(env, "TIDINGS_MAX_SUBSCRIPTIONS", cls.max_subscriptions, 0),
            max_header_bytes=_int(env, "TIDINGS_MAX_HEADER_BYTES", cls.max_header_bytes, 1024),
            link_origins=_origins(env, "TIDINGS_LINK_ORIGINS"),
            cors_origins=_cors_origins(env),
            chunk_size=_int(env, "TIDINGS_CHUNK_SIZE", cls.chunk_size, 1),
            inbox_cap=_int(env, "TIDINGS_INBOX_CAP", cls.inbox_cap, 1),
            timeline_cap=_int(env, "TIDINGS_TIMELINE_CAP", cls.timeline_cap, 1),
            timeline_model=(env.get("TIDINGS_TIMELINE_MODEL") or cls.timeline_model).lower(),
            celebrity_followers=_int(env, "TIDINGS_CELEBRITY_FOLLOWERS",
                                     cls.celebrity_followers, 0),
            retention_days=_int(env, "TIDINGS_RETENTION_DAYS", cls.retention_days, 1),
            lease_seconds=_float(env, "TIDINGS_JOB_LEASE_SECONDS", cls.lease_seconds),
            job_max_attempts=_int(env, "TIDINGS_JOB_MAX_ATTEMPTS", cls.job_max_attempts, 1),
            job_backoff_seconds=_float(env, "TIDINGS_JOB_BACKOFF_SECONDS",
                                       cls.job_backoff_seconds),
            ready_timeout=_float(env, "TIDINGS_READY_TIMEOUT", cls.ready_timeout),
            db_connect_timeout=_float(env, "TIDINGS_DB_CONNECT_TIMEOUT",
                                      cls.db_connect_timeout),
            db_statement_timeout=_float(env, "TIDINGS_DB_STATEMENT_TIMEOUT",
                                        cls.db_statement_timeout, zero=True),
            db_pool_timeout=_float(env, "TIDINGS_DB_POOL_TIMEOUT", cls.db_pool_timeout),
        )
        return replace(config, **overrides) if overrides else config
