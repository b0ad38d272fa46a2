"""Build a :class:`Tidings` on a test store, with a few event types, and read what it holds.

The behaviour suite (``test_publish.py``, ``test_audience.py``, …) opens engines through
:func:`open_tidings` so every file uses the same types and a :class:`FrozenClock`::

    @pytest.fixture
    def t(any_store_url: str) -> Iterator[Tidings]:
        with open_tidings(any_store_url) as t:
            yield t

``any_store_url`` (``conftest.py``) is a clean store of every kind of ``store_registry.KINDS`` in
turn: ``memory``, ``sqlite``, ``postgresql``, ``mysql``, ``redis``, ``cluster``. Engines opened on
the same ``memory://`` URL in one test share one :class:`MemoryStore` (as engines on one SQL URL
share the database), built with the settings of the first; engines opened on the URL of a hot
store's place (``redis``, ``cluster``) get its ``hot_store_url`` too. :func:`on_place` binds a
place to its URL for the length of a test.

The readers below see the store only through the facade and the ports' public reads (never a
table), so the same assertions hold on every store.

The types:

``mention``      recipients only, no bundling, category ``mention``, priority 2
``page-linked``  recipients and object subscribers, bundled by object (Echo's example)
``edit``         all three audience sources, category ``edit``
``post``         followers of the actor only
``message``      recipients and object subscribers, section ``message``, category ``talk``
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from store_registry import Place
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.types import EventType, Templates
from tidings.domain.views import NotificationKey, ReadState
from tidings.engine import Tidings
from tidings.jobs.model import JobSpec
from tidings.ports import Store
from tidings.wiring import MEMORY, open_store

TYPES = (
    EventType(
        name="mention", category="mention", priority=2, audience=("recipients",),
        templates=Templates(title="{{ actor }} mentioned you on {{ object_title }}"),
    ),
    EventType(
        name="page-linked", category="page-linked", bundle="object",
        audience=("recipients", "object_subscribers"),
        templates=Templates(
            title="{{ object_title }} was linked by {{ actors_text }}",
            bundled_title="{{ object_title }} was linked by {{ actors_text }}",
        ),
    ),
    EventType(
        name="edit", category="edit",
        audience=("recipients", "object_subscribers", "actor_followers"),
        templates=Templates(title="{{ actor }} edited {{ object_title }}"),
    ),
    EventType(
        name="post", category="post", audience=("actor_followers",),
        templates=Templates(title="{{ actor }} posted {{ object_title }}"),
    ),
    EventType(
        name="message", category="talk", section="message",
        audience=("recipients", "object_subscribers"),
        templates=Templates(title="{{ actor }} wrote on {{ object_title }}"),
    ),
)


# memory:// URL -> the store every engine opened on it in this test shares
_MEMORY_STORES: dict[str, Store] = {}
# URL of a place bound by ``on_place`` -> the settings that open it besides the URL
_PLACES: dict[str, dict[str, Any]] = {}
EVERY_EVENT = 2**62  # a time after every event: ``expired_ids`` before it lists them all


def open_tidings(url: str, *, types: tuple[EventType, ...] = TYPES,
                 clock: FrozenClock | None = None, **settings: Any) -> Tidings:
    """A Tidings on ``url`` with ``types`` declared and a frozen clock; ``settings`` go to Config.

    Use it as a context manager so its connection pool is closed after the test.
    """
    config = Config(database_url=url, **{**_PLACES.get(url, {}), **settings})
    clock = clock or FrozenClock()
    store = None
    if url.startswith(MEMORY):
        store = _MEMORY_STORES.get(url)
        if store is None:
            store = _MEMORY_STORES[url] = open_store(
                url, clock, lease_seconds=config.lease_seconds,
                max_attempts=config.job_max_attempts,
                backoff_seconds=config.job_backoff_seconds)
    tidings = Tidings(config, types=types, clock=clock, store=store)
    tidings.load_types()
    return tidings


def drop_memory_store(url: str) -> None:
    """Forget the memory store of ``url`` (after the test that used it)."""
    _MEMORY_STORES.pop(url, None)


@contextlib.contextmanager
def on_place(place: Place) -> Iterator[str]:
    """``place``'s URL, on which :func:`open_tidings` opens the place's store until the end."""
    _PLACES[place.url] = place.settings
    try:
        yield place.url
    finally:
        _PLACES.pop(place.url, None)
        drop_memory_store(place.url)


# -- readers ----------------------------------------------------------------------------------

def inbox_of(t: Tidings, user: str, **filters: Any) -> list[tuple[str, str, str | None]]:
    """A user's whole inbox (every page), newest first, as (type, actor, object) tuples."""
    return [(n.type, n.actor, n.object) for n in all_items(t, user, **filters)]


def all_items(t: Tidings, user: str, *, limit: int = 100, **filters: Any) -> list[Any]:
    """Every listed item of a user's inbox, following cursors to the end."""
    items: list[Any] = []
    cursor = None
    while True:
        page = t.notifications(user, limit=limit, cursor=cursor, **filters)
        items += page.items
        cursor = page.next_cursor
        if cursor is None:
            return items


def event_ids(t: Tidings) -> list[int]:
    """Every stored event, retracted ones too, ascending."""
    with t.store.read() as tx:
        return sorted(tx.events.expired_ids(types=None, other_than=None, before=EVERY_EVENT,
                                            limit=100_000))


def keys_of(t: Tidings, ids: Iterable[str | int] | None = None) -> list[NotificationKey]:
    """Every stored notification of these events (default: of every event), sorted."""
    wanted = event_ids(t) if ids is None else [int(i) for i in ids]
    with t.store.read() as tx:
        keys = tx.inbox.keys_for_events(wanted)
    return sorted(keys, key=lambda k: (k.event_id, k.user_id))


def recipients_of(t: Tidings, event_id: str | int) -> list[str]:
    """The users who hold a notification of this event, sorted."""
    return sorted(k.user_id for k in keys_of(t, [event_id]))


def notification_rows(t: Tidings, ids: Iterable[str | int] | None = None
                      ) -> list[tuple[NotificationKey, ReadState]]:
    """Every stored notification of these events (default: of every event) with its own read
    columns, sorted by (event, user): what a repeated or idempotent write must leave alone."""
    keys = keys_of(t, ids)
    states: dict[tuple[str, int], ReadState] = {}
    with t.store.read() as tx:
        for user in sorted({k.user_id for k in keys}):
            held = sorted({k.event_id for k in keys if k.user_id == user})
            states.update(((user, s.event_id), s) for s in tx.inbox.read_states(user, held))
    return [(k, states[(k.user_id, k.event_id)]) for k in keys]


def jobs_by_func(t: Tidings) -> dict[str, int]:
    """How many queued jobs (claimed ones included) each job function has."""
    return t.queue.counts_by_func()


def users_state(t: Tidings, users: Iterable[str]) -> dict[str, Any]:
    """What the public reads show of these users: join times, watermarks, subscriptions,
    follows both ways, mutes and preferences."""
    wanted = sorted(set(users))
    with t.store.read() as tx:
        joined = tx.graph.joined(wanted)
        markers = tx.inbox.load_markers_many(wanted)
    return {
        "joined": joined,
        "markers": markers,
        "subscriptions": {u: t.subscriptions(u, limit=100).items for u in wanted},
        "following": {u: t.following(u, limit=100).items for u in wanted},
        "followers": {u: t.followers(u, limit=100).items for u in wanted},
        "preferences": {u: t.get_preferences(u) for u in wanted},
    }


def snapshot(t: Tidings, users: Iterable[str] = ()) -> dict[str, Any]:
    """Everything the public reads show of the store: every event as stored, every notification
    with its read columns, the queue (figures and jobs per function), declared types, and the
    state of ``users``. Two equal snapshots: a call wrote nothing anyone can read back."""
    ids = event_ids(t)
    with t.store.read() as tx:
        events = [tx.events.get(i) for i in ids]
        types = sorted(tx.settings.load_types())
    return {
        "events": events,
        "notifications": notification_rows(t),
        "queue": t.queue.stats(),
        "jobs": jobs_by_func(t),
        "types": types,
        "users": users_state(t, users),
    }


def enqueue(t: Tidings, *specs: JobSpec) -> None:
    """Enqueue jobs in their own unit of work."""
    t.store.transact(lambda tx: tx.jobs.enqueue_many(list(specs)))


# -- SQL stores only --------------------------------------------------------------------------
# For tests whose subject is a SQL database (the HTTP API on a SQL file, SQL-shape checks); the
# behaviour suite reads through the facade and the ports above, so it runs on every store.

def table_counts(t: Tidings) -> dict[str, int]:
    """Row count of every table the SQL schema declares that holds what was asked for: not
    ``rate_buckets``, which every publishing request takes from, refused or not (the rate
    limit counts attempts)."""
    from sqlalchemy import func, select

    from tidings.store.sql.schema import metadata

    counts = [select(func.count()).select_from(table).scalar_subquery().label(table.name)
              for table in metadata.sorted_tables if table.name != "rate_buckets"]
    with _sql(t).read() as conn:
        row = conn.execute(select(*counts)).one()
    return dict(row._mapping)


def table_names() -> list[str]:
    """Every table the SQL schema declares."""
    from tidings.store.sql.schema import metadata

    return list(metadata.tables)


def table_rows(t: Tidings, name: str) -> list[dict[str, Any]]:
    """Every row of one SQL table, as dicts, in a stable order (all columns, ascending)."""
    from sqlalchemy import select

    from tidings.store.sql.schema import metadata

    table = metadata.tables[name]
    with _sql(t).read() as conn:
        rows = conn.execute(select(table).order_by(*table.c)).all()
    return [dict(row._mapping) for row in rows]


def stored_texts(t: Tidings) -> Iterator[tuple[str, str]]:
    """(where, text) of everything a store holds, of every kind of store: every text and blob
    column of every SQL table (a delivery record's users unpacked), every Redis key's name
    and value of a hot store, every table of the memory store (its ``repr``). For checks
    that a value is nowhere (a person's erasure)."""
    import json
    from dataclasses import fields

    store: Any = t.store
    if store.backend == "memory":
        state = store._state
        for field in fields(state):
            yield field.name, repr(getattr(state, field.name))
        return
    records = getattr(store, "records", store)
    yield from _sql_texts(records.db)
    if records is not store:  # a hot store: its Redis key space too
        from tidings.store.redis import journal

        for part in journal.dump(store.redis, store.redis.prefix):
            for name, _kind, data in part:
                yield f"redis {name}", name + " " + json.dumps(data)


def _sql_texts(db: Any) -> Iterator[tuple[str, str]]:
    from sqlalchemy import select

    from tidings.store.sql.core import recipients
    from tidings.store.sql.schema import metadata

    with db.read() as conn:
        for table in metadata.sorted_tables:
            for row in conn.execute(select(table)):
                for column, value in row._mapping.items():
                    if table.name == "deliveries" and column == "users":
                        value = "\n".join(recipients.decode(value))
                    if isinstance(value, (bytes, memoryview)):
                        value = bytes(value).decode("utf-8", "replace")
                    if isinstance(value, str):
                        yield f"{table.name}.{column}", value


def _sql(t: Tidings) -> Any:
    """The SQL store's database (a test on another store has no tables to read)."""
    from tidings.store.sql.store import SqlStore

    assert isinstance(t.store, SqlStore), f"{t.store.backend} has no tables"
    return t.store.db
