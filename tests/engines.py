"""Build a :class:`Tidings` on a test store, with a few event types, and look inside its tables.

The behaviour suite (``test_publish.py``, ``test_audience.py``, …) opens engines through
:func:`open_tidings` so every file uses the same types and a :class:`FrozenClock`::

    @pytest.fixture
    def t(store_url: str) -> Iterator[Tidings]:
        with open_tidings(store_url) as t:
            yield t

The types:

``mention``      recipients only, no bundling, category ``mention``, priority 2
``page-linked``  recipients and object subscribers, bundled by object (Echo's example)
``edit``         all three audience sources, category ``edit``
``post``         followers of the actor only
``message``      recipients and object subscribers, section ``message``, category ``talk``
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.jobs.model import JobSpec
from tidings.store.sql.schema import metadata

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


def open_tidings(url: str, *, types: tuple[EventType, ...] = TYPES,
                 clock: FrozenClock | None = None, **settings: Any) -> Tidings:
    """A Tidings on ``url`` with ``types`` declared and a frozen clock; ``settings`` go to Config.

    Use it as a context manager so its connection pool is closed after the test.
    """
    tidings = Tidings(Config(database_url=url, **settings), types=types,
                      clock=clock or FrozenClock())
    tidings.load_types()
    return tidings


def table_counts(t: Tidings) -> dict[str, int]:
    """Row count of every table the schema declares."""
    counts = [select(func.count()).select_from(table).scalar_subquery().label(table.name)
              for table in metadata.sorted_tables]
    with t.store.db.read() as conn:
        row = conn.execute(select(*counts)).one()
    return dict(row._mapping)


def table_rows(t: Tidings, name: str) -> list[dict[str, Any]]:
    """Every row of one table, as dicts, in a stable order (all columns, ascending)."""
    table = metadata.tables[name]
    with t.store.db.read() as conn:
        rows = conn.execute(select(table).order_by(*table.c)).all()
    return [dict(row._mapping) for row in rows]


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


def recipients_of(t: Tidings, event_id: str) -> list[str]:
    """The users who hold a notification of this event, sorted."""
    return sorted(r["user_id"] for r in table_rows(t, "notifications")
                  if r["event_id"] == int(event_id))


def enqueue(t: Tidings, *specs: JobSpec) -> None:
    """Enqueue jobs in their own transaction."""
    t.store.transact(lambda tx: tx.jobs.enqueue_many(list(specs)))


def jobs_by_func(t: Tidings) -> dict[str, int]:
    """How many queued jobs each job function has."""
    counts: dict[str, int] = {}
    for row in table_rows(t, "jobs"):
        counts[row["func"]] = counts.get(row["func"], 0) + 1
    return counts
