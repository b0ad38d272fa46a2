"""A worker that started before a type was declared still fans its events out by that type.

Regression: ``fanout`` looked the event's type up only in the worker's own registry, read at
start-up, so an event of a type another process declared later with ``define_type`` fell back to
the defaults (audience ``recipients`` only, category ``general``) and its subscribers silently
got nothing.
"""

from __future__ import annotations

from sqlalchemy import select

from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType
from tidings.engine import Tidings
from tidings.store.sql.schema import notifications


def test_a_type_declared_after_the_worker_started_is_fanned_out_by_its_rules(
    store_url: str,
) -> None:
    worker_side = Tidings(Config(database_url=store_url, chunk_size=2))
    app_side = Tidings(Config(database_url=store_url))
    try:
        worker_side.load_types()  # what `tidings worker` does at start-up: nothing declared yet
        app_side.define_type(EventType("late", category="late-news",
                                       audience=("object_subscribers",)))
        for user in ("ann", "bea", "cid"):
            app_side.subscribe(user, "late", "board")
        app_side.publish(Event("late", actor="dan", object="board"))

        worker_side.run_jobs()  # the fan-out and its chunk jobs (chunk size 2)

        with app_side.store.db.read() as conn:
            rows = conn.execute(select(notifications.c.user_id, notifications.c.category)
                                .order_by(notifications.c.user_id)).all()
        assert [tuple(r) for r in rows] == [("ann", "late-news"), ("bea", "late-news"),
                                            ("cid", "late-news")]
    finally:
        worker_side.close()
        app_side.close()
