"""A worker that started before a type was declared still fans its events out by that type.

Regression: ``fanout`` looked the event's type up only in the worker's own registry, read at
start-up, so an event of a type another process declared later with ``define_type`` fell back to
the defaults (audience ``recipients`` only, category ``general``) and its subscribers silently
got nothing.
"""

from __future__ import annotations

from engines import keys_of, open_tidings
from tidings.clock import FrozenClock
from tidings.domain.events import Event
from tidings.domain.types import EventType


def test_a_type_declared_after_the_worker_started_is_fanned_out_by_its_rules(
    any_store_url: str, clock: FrozenClock,
) -> None:
    # what `tidings worker` does at start-up (load the declared types): nothing declared yet
    with (open_tidings(any_store_url, types=(), clock=clock, chunk_size=2) as worker_side,
          open_tidings(any_store_url, types=(), clock=clock) as app_side):
        app_side.define_type(EventType("late", category="late-news",
                                       audience=("object_subscribers",)))
        for user in ("ann", "bea", "cid"):
            app_side.subscribe(user, "late", "board")
        published = app_side.publish(Event("late", actor="dan", object="board"))

        worker_side.run_jobs()  # the fan-out and its chunk jobs (chunk size 2)

        assert [k.user_id for k in keys_of(app_side)] == ["ann", "bea", "cid"]
        with app_side.store.read() as tx:
            states = {user: tx.inbox.read_states(user, [int(published.id)])
                      for user in ("ann", "bea", "cid")}
        assert {user: [s.category for s in found] for user, found in states.items()} == {
            "ann": ["late-news"], "bea": ["late-news"], "cid": ["late-news"]}
