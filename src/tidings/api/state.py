"""What every request needs: the engine, authentication, metrics, limits."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from tidings.api.auth import Authenticator, Principal
from tidings.api.groupcommit import IN_FLIGHT, GroupCommit
from tidings.api.live import OpenStreams
from tidings.api.ratelimit import RateLimiter, SharedRateLimiter, admit
from tidings.engine import Tidings
from tidings.metrics import Metrics


@dataclass
class AppState:
    tidings: Tidings
    auth: Authenticator
    metrics: Metrics
    limiter: SharedRateLimiter  # server keys' publishing: one budget across processes
    stream_interval: float = 0.5
    stream_write_timeout: float = 10.0
    streams: OpenStreams = field(default_factory=OpenStreams)
    # requests of user tokens, per user (TIDINGS_USER_RATE_LIMIT); 0: no limit
    user_limiter: RateLimiter = field(default_factory=lambda: RateLimiter(0))
    _locales: dict[str, str | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    commits: GroupCommit = field(init=False)  # POST /v1/events: group commit

    def __post_init__(self) -> None:
        # SQLite takes one writer at a time: a second group in flight would only wait
        single_writer = self.tidings.store.backend in ("sqlite", "memory")
        self.commits = GroupCommit(self.tidings, in_flight=1 if single_writer else IN_FLIGHT)

    def authenticate(self, authorization: str | None, access_token: str | None = None
                     ) -> Principal:
        """Who calls; a user token also takes one request from its user's bucket (429 with
        ``Retry-After`` when it is empty)."""
        caller = self.auth.authenticate(authorization, access_token)
        if caller.user is not None and not caller.is_server:
            admit(self.user_limiter, caller.user, 1, what="requests for this user",
                  setting="TIDINGS_USER_RATE_LIMIT")
        return caller

    async def locale_of(self, user: str) -> str | None:
        """The user's preferred locale, cached (preferences are read rarely)."""
        with self._lock:
            if user in self._locales:
                return self._locales[user]
        try:
            prefs = await run_in_threadpool(self.tidings.get_preferences, user)
        except Exception:
            return None
        locale = prefs.get("locale")
        with self._lock:
            if len(self._locales) > 50_000:
                self._locales.clear()
            self._locales[user] = locale if isinstance(locale, str) else None
        return self._locales[user]

    def forget_locale(self, user: str) -> None:
        with self._lock:
            self._locales.pop(user, None)


async def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.tidings
    return state
