"""Driver errors are classified by kind, and the API answers each kind as the contract says.

A store that cannot serve now (connection lost, too busy, a statement timed out) raises
:class:`StoreUnavailable` (HTTP 503 with ``Retry-After``); a value the store refuses (NUL in
PostgreSQL text, a number out of range) raises :class:`StoreRejected` (422); anything else — an
integrity error that escaped the engine, a defect — stays the driver's error and is answered
as a logged 500 whose body carries an error id, never a traceback. The errors are raised by
the real databases (server-side ``RAISE`` / ``SIGNAL`` with the SQLSTATE or error number of
each kind; a trigger for the HTTP cases).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Connection, text
from sqlalchemy import exc as sa_exc

from contract import error_of
from servers import LiveServer
from tidings.exceptions import StoreRejected, StoreUnavailable, TidingsError
from tidings.store.sql.core.database import Database

pytest_plugins = ["servers"]

# kind -> (PostgreSQL SQLSTATE, MariaDB error number and SQLSTATE)
KINDS = {
    "out-of-range": ("22003", (1264, "22003")),
    "integrity": ("23505", (1062, "23000")),
    "serialization": ("40001", (1213, "40001")),
    "timeout": ("57014", (3024, "HY000")),
    "internal": ("XX000", (999, "HY000")),
}
CLASSIFIED: dict[str, type[Exception]] = {
    "out-of-range": StoreRejected,
    "integrity": sa_exc.IntegrityError,  # the engine catches it (idempotency races)
    "serialization": StoreUnavailable,
    "timeout": StoreUnavailable,
    "internal": sa_exc.DBAPIError,
}


def _raise_statement(backend: str, kind: str) -> str:
    sqlstate, (errno, mysql_state) = KINDS[kind]
    if backend == "postgresql":
        return f"DO $$ BEGIN RAISE EXCEPTION 'boom' USING ERRCODE = '{sqlstate}'; END $$"
    return (f"BEGIN NOT ATOMIC SIGNAL SQLSTATE '{mysql_state}' SET MYSQL_ERRNO = {errno}, "
            "MESSAGE_TEXT = 'boom'; END")


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    database = Database(store_url)
    yield database
    database.dispose()


@pytest.mark.parametrize("kind", list(KINDS))
def test_driver_errors_are_classified_by_kind(db: Database, backend: str, kind: str) -> None:
    if backend == "sqlite":
        pytest.skip("SQLite cannot raise an error of a chosen kind")
    with pytest.raises(CLASSIFIED[kind]) as raised, db.write() as conn:
        conn.execute(text(_raise_statement(backend, kind)))
    if CLASSIFIED[kind] is sa_exc.DBAPIError:
        assert not isinstance(raised.value, TidingsError | sa_exc.IntegrityError)


def test_a_nul_byte_is_a_refused_value_not_an_outage(db: Database, backend: str) -> None:
    statement = text("SELECT :value")
    if backend != "postgresql":  # only PostgreSQL refuses NUL in text
        with db.read() as conn:
            assert conn.execute(statement, {"value": "a\x00b"}).scalar() == "a\x00b"
        return
    with pytest.raises(StoreRejected, match="NUL"), db.read() as conn:
        conn.execute(statement, {"value": "a\x00b"})


def test_a_defect_is_not_an_outage(db: Database) -> None:
    with pytest.raises(sa_exc.DBAPIError) as raised, db.read() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))
    assert not isinstance(raised.value, TidingsError)


def test_transact_retries_a_serialization_failure(db: Database, backend: str) -> None:
    if backend == "sqlite":
        pytest.skip("SQLite cannot raise an error of a chosen kind")
    calls: list[int] = []

    def work(conn: Connection) -> str:
        calls.append(1)
        if len(calls) == 1:
            conn.execute(text(_raise_statement(backend, "serialization")))
        return "done"

    assert db.transact(work) == "done"
    assert len(calls) == 2
    with pytest.raises(StoreUnavailable):  # and gives up after its attempts
        db.transact(lambda conn: conn.execute(text(_raise_statement(backend, "serialization"))),
                    attempts=2)


# -- through HTTP -----------------------------------------------------------------------------

HTTP_ANSWERS = {  # kind -> (status, code)
    "out-of-range": (422, "invalid_input"),
    "integrity": (500, "internal_error"),
    "internal": (500, "internal_error"),
    "serialization": (503, "store_unavailable"),
    "timeout": (503, "store_unavailable"),
}
STORE_ERROR_METRICS = {  # kind -> its label in tidings_store_errors_total
    "out-of-range": "rejected", "integrity": "conflict", "serialization": "unavailable",
    "timeout": "unavailable"}


@pytest.fixture
def sabotaged(api_backend: str, api_store_url: str,
              start_server: Callable[..., LiveServer]) -> Iterator[Callable[[str], LiveServer]]:
    """A server whose store raises an error of the given kind on every new follow."""
    database = Database(api_store_url)

    def sabotage(kind: str) -> LiveServer:
        with database.write() as conn:
            if api_backend == "postgresql":
                conn.execute(text(
                    "CREATE FUNCTION sabotage() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    f"RAISE EXCEPTION 'boom' USING ERRCODE = '{KINDS[kind][0]}'; END $$"))
                conn.execute(text("CREATE TRIGGER sabotage BEFORE INSERT ON follows "
                                  "FOR EACH ROW EXECUTE FUNCTION sabotage()"))
        return start_server()

    yield sabotage
    database.dispose()


@pytest.mark.parametrize("api_backend", ["postgresql"])
@pytest.mark.parametrize("kind", list(HTTP_ANSWERS))
def test_the_api_answers_each_kind_of_store_error(sabotaged: Callable[[str], LiveServer],
                                                  kind: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    live = sabotaged(kind)
    status, code = HTTP_ANSWERS[kind]
    with live.http() as http, caplog.at_level(logging.INFO):
        response = http.put("/v1/users/bob/follows/alice")
        error = error_of(response)
        assert (response.status_code, error["code"]) == (status, code), error
        assert ("retry-after" in response.headers) == (status == 503)
        if status == 500:
            error_id = re.fullmatch(r".*\(error id ([0-9a-f]{12})\)", error["message"])
            assert error_id, error["message"]
            logged = [r for r in caplog.records if error_id[1] in r.getMessage()]
            assert logged and logged[0].levelno == logging.ERROR
            assert "boom" not in error["message"]  # the driver's words stay in the log
        # the connection and the server go on serving
        assert http.get("/v1/users/bob/follows").status_code == 200
        # and count it by its kind (a defect the driver raised is none: a logged 500)
        metrics = http.get("/metrics").text
        counted = STORE_ERROR_METRICS.get(kind)
        if counted is None:
            assert "tidings_store_errors_total{" not in metrics
        else:
            assert f'tidings_store_errors_total{{kind="{counted}"}} 1.0' in metrics
