"""PostgreSQL: events and their jobs stored by one statement, for a publish awaited on an
event loop (:class:`tidings.store.sql.asyncreads.PublishOnLoop`).

A publish as a unit of work is a transaction of five round trips — ``BEGIN``, the read of
the idempotency keys, the insert of the events, the insert of their jobs, ``COMMIT`` — run
in a thread. Here one statement does it all in autocommit, so it commits alone (one round
trip, one flush of the log): the events go in only if none of their keys is taken yet (all
or none: nothing to decide row by row), and each new event's job is built from its id in
the server. A key taken by a concurrent publish after the check fails the statement on the
unique index, and nothing is stored.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import TextClause, text

from tidings.domain.events import Event
from tidings.jobs.model import EventJob
from tidings.store.sql.bulk import column_arrays, unnest_insert
from tidings.store.sql.events import COLUMNS, event_row
from tidings.store.sql.schema import events

_JOB_ARRAYS = ("jfunc", "jtail", "jkey", "jpriority")


@functools.lru_cache(maxsize=64)
def _statement(single: tuple[bool, ...]) -> TextClause:
    """The statement for events whose columns have the ``single`` shape of
    :func:`column_arrays`; its rows are the new events' ids, in the rows' order."""
    insert = unnest_insert(events, COLUMNS, False, returning=("id",), single=single,
                           ordered=True, where="NOT EXISTS (SELECT 1 FROM taken)").text
    arrays = ", ".join(f"json_array_elements_text(CAST(:{name} AS JSON))"
                       for name in _JOB_ARRAYS)
    return text(
        # one probe of the unique index per key (as tidings.store.sql.bulk.probes reads them)
        "WITH taken AS MATERIALIZED (SELECT 1 FROM json_array_elements_text(CAST(:keys AS JSON))"
        " AS k(value) CROSS JOIN LATERAL (SELECT 1 FROM events"
        " WHERE events.idempotency_scope = CAST(:scope AS VARCHAR)"
        " AND events.idempotency_key = k.value LIMIT 1) AS p LIMIT 1),"
        f" new AS ({insert}),"
        " numbered AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM new),"
        " queued AS (INSERT INTO jobs (func, args, unique_key, priority, run_after,"
        " grabbed_until, attempts, created_at)"
        " SELECT j.func, '{\"event_id\":' || numbered.id || j.tail, j.key || numbered.id,"
        " CAST(j.priority AS SMALLINT), CAST(:now AS BIGINT), 0, 0, CAST(:now AS BIGINT)"
        f" FROM numbered JOIN ROWS FROM ({arrays}) WITH ORDINALITY"
        " AS j(func, tail, key, priority, n) ON j.n = numbered.n"
        " ON CONFLICT DO NOTHING)"
        " SELECT id FROM new ORDER BY id")


def unit(rows: Sequence[tuple[Event, str]], jobs: Sequence[EventJob], now: int,
         scope: str) -> tuple[TextClause, dict[str, Any]]:
    """The statement that stores ``rows`` (event, payload JSON) in ``scope`` with
    ``jobs[i]`` for the i-th event, and its parameters."""
    single, params = column_arrays([event_row(e, p, now, scope) for e, p in rows], COLUMNS)
    keys = [e.idempotency_key for e, _ in rows if e.idempotency_key is not None]
    params.update(
        keys=json.dumps(keys), scope=scope, now=now,
        jfunc=json.dumps([j.func for j in jobs]),
        # the args' JSON after the event id: ``}``, or ``,"at":…}``
        jtail=json.dumps(["," + _args(j)[1:] if j.args else "}" for j in jobs]),
        jkey=json.dumps([j.key_prefix for j in jobs]),
        jpriority=json.dumps([j.priority for j in jobs]))
    return _statement(single), params


def _args(job: EventJob) -> str:
    return json.dumps(dict(job.args), separators=(",", ":"))
