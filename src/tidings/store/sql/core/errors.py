"""Driver errors by kind: a store that cannot serve now (:class:`StoreUnavailable`), a value it
refuses (:class:`StoreRejected`), a transaction worth trying again (deadlock, serialisation
failure, lock timeout), or neither."""

from __future__ import annotations

from sqlalchemy import exc as sa_exc

from tidings.exceptions import StoreRejected, StoreUnavailable, TidingsError

# psycopg/pymysql error codes that mean "try the transaction again".
_RETRYABLE = ("deadlock", "could not serialize", "lock wait timeout", "database is locked",
              "1213", "1205", "40001", "40p01")


def classify(exc: sa_exc.DBAPIError) -> TidingsError | None:
    """The error a driver error stands for, or None when it is neither an outage nor a refused
    value (an integrity error, which the engine may handle, or a defect): leave it as it is."""
    if exc.connection_invalidated or _is_connection_error(exc):
        return StoreUnavailable(f"the store cannot be reached: {_first_line(exc)}")
    if _is_unavailable(exc):
        return StoreUnavailable(f"the store cannot serve this now: {_first_line(exc)}")
    if isinstance(exc, sa_exc.DataError):
        return StoreRejected(f"the store refused a value: {_first_line(exc)}")
    return None


def is_retryable(exc: BaseException) -> bool:
    """A deadlock, serialisation failure or lock timeout: the transaction may succeed again."""
    message = str(getattr(exc, "orig", exc)).lower()
    code = str(getattr(getattr(exc, "orig", None), "sqlstate", "") or "").lower()
    args = getattr(getattr(exc, "orig", None), "args", ())
    if args and isinstance(args[0], int) and args[0] in (1213, 1205):
        return True
    return code in ("40001", "40p01") or any(word in message for word in _RETRYABLE[:5])


def _is_connection_error(exc: sa_exc.DBAPIError) -> bool:
    if isinstance(exc, sa_exc.InterfaceError):
        return True
    message = str(exc.orig).lower()
    signs = ("connection refused", "could not connect", "can't connect", "server closed",
             "connection timeout", "lost connection", "gone away", "terminating connection",
             "connection is closed", "the database system is", "connection reset",
             "timeout expired", "name or service not known", "no route to host")
    return isinstance(exc, sa_exc.OperationalError) and any(s in message for s in signs)


# PostgreSQL SQLSTATE classes (and codes) of a store that cannot serve now: connection
# exception, transaction rollback (deadlock, serialisation), insufficient resources, operator
# intervention (statement timeout, shutdown), system error, lock not available.
_PG_UNAVAILABLE = ("08", "40", "53", "57", "58", "55P03")
# MariaDB/MySQL: too many connections, shutdown, lock wait timeout, deadlock, query
# interrupted or over its time limit, connection killed, client-side connection errors.
_MYSQL_UNAVAILABLE = frozenset({1040, 1053, 1205, 1213, 1317, 1927, 3024, 4031,
                                2002, 2003, 2006, 2013, 2055})
# SQLite primary result codes: busy, locked, out of memory, I/O error, disk full, cannot open.
_SQLITE_UNAVAILABLE = frozenset({5, 6, 7, 10, 13, 14})


def _is_unavailable(exc: sa_exc.DBAPIError) -> bool:
    """The store is there but cannot serve now; the same request may succeed later."""
    if not isinstance(exc, sa_exc.OperationalError) and not is_retryable(exc):
        return False
    orig = exc.orig
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int):  # pymysql: (error number, message)
        return args[0] in _MYSQL_UNAVAILABLE
    sqlite_code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(sqlite_code, int):
        return sqlite_code & 0xFF in _SQLITE_UNAVAILABLE
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        return sqlstate.startswith(_PG_UNAVAILABLE)
    return is_retryable(exc)


def _first_line(exc: BaseException) -> str:
    return str(getattr(exc, "orig", exc)).strip().splitlines()[0][:200] if str(exc) else "error"
