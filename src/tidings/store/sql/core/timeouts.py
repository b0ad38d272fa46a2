"""How long the SQL store waits on its database, so that one that hangs becomes a 503.

A database that refuses connections fails at once. One that hangs does not: a stopped server,
or a network or proxy that stops forwarding while the connection stays open, still
acknowledges TCP, so keepalives see nothing wrong, and a server-side ``statement_timeout``
never fires on a statement that never arrived. Every wait is bounded on the client side:

* ``connect``: opening a connection, handshake included (libpq counts whole seconds, at
  least 2, on PostgreSQL);
* ``statement``: the longest a statement may run. PostgreSQL cancels it then
  (``statement_timeout``); the client waits :data:`ANSWER_GRACE` seconds longer for any answer
  (that cancellation's, a result, a commit's), then closes the connection as hung: the
  request fails with :class:`tidings.exceptions.StoreUnavailable` (503) and the pool opens a
  new connection for the next one. On MariaDB/MySQL only the client's wait applies (PyMySQL's
  read and write timeouts). ``None``: no limit (schema migrations);
* ``pool``: waiting for a free connection of the pool.

psycopg has no read timeout of its own: :mod:`.boundedpg` gives its connections one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tidings.config import Config

ANSWER_GRACE = 1.0  # s the client waits past the statement timeout for the server's answer


@dataclass(frozen=True)
class SqlTimeouts:
    """Seconds the SQL store waits to connect, for a statement, for a pooled connection."""

    connect: float = 5.0
    statement: float | None = 30.0
    pool: float = 10.0

    @classmethod
    def of(cls, config: Config) -> SqlTimeouts:
        """The ``TIDINGS_DB_*`` settings (a statement timeout of 0: no limit)."""
        return cls(connect=config.db_connect_timeout,
                   statement=config.db_statement_timeout or None, pool=config.db_pool_timeout)

    @property
    def answer(self) -> float | None:
        """The longest the client waits for one answer before it closes the connection."""
        return None if self.statement is None else self.statement + ANSWER_GRACE

    def postgresql(self) -> dict[str, Any]:
        """psycopg's connection arguments. Keepalives still notice a peer that vanished
        without a word (no acknowledgement at all) while a connection sits idle."""
        milliseconds = 0 if self.statement is None else max(1, round(self.statement * 1000))
        return {"connect_timeout": max(2, math.ceil(self.connect)), "keepalives": 1,
                "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3,
                "options": f"-c statement_timeout={milliseconds}"}

    def mysql(self) -> dict[str, Any]:
        """PyMySQL's connection arguments: its socket timeouts bound a silent server."""
        return {"connect_timeout": self.connect, "read_timeout": self.answer,
                "write_timeout": self.answer}
