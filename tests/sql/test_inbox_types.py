"""The inbox's types dictionary (``inbox_types``): a notification row names its type by id,
and reads its category and section from the type's row — so the notifications of a type
declared again with another category follow it (as Echo's do). Fan-out adds a new type in its
own unit: two units adding one type end with one id, and a unit rolled back teaches the
database's cache nothing."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import select

from engines import open_tidings, table_rows
from tidings.domain.types import EventType
from tidings.store.sql.core.database import Database
from tidings.store.sql.inbox.types import TypeIds, cache_of
from tidings.store.sql.schema import inbox_types

MENTION = EventType("mention", category="people", section="alert", audience=("recipients",))
NEVER_SENT = EventType("poke", category="talk", section="message", audience=("recipients",))


def test_rows_name_their_type_and_follow_its_new_category(store_url: str) -> None:
    with open_tidings(store_url, types=(MENTION, NEVER_SENT)) as t:
        t.publish({"type": "mention", "actor": "ann", "recipients": ["bob"]})
        t.run_jobs()
        t.define_type(EventType("mention", category="talk", section="message",
                                audience=("recipients",)))
        t.publish({"type": "mention", "actor": "cat", "recipients": ["bob"]})
        t.run_jobs()

        (kind,) = table_rows(t, "inbox_types")
        assert (kind["name"], kind["category"], kind["section"]) == ("mention", "talk",
                                                                     "message")
        rows = table_rows(t, "notifications")
        assert len(rows) == 2 and {r["type_id"] for r in rows} == {kind["id"]}
        assert not {"type", "category", "section"} & set(rows[0])

        items = t.notifications("bob").items
        assert [(i.type, i.category, i.section) for i in items] == [
            ("mention", "talk", "message")] * 2
        assert len(t.notifications("bob", category="talk").items) == 2
        assert t.notifications("bob", category="people").items == []
        assert len(t.notifications("bob", section="message", types=["mention"]).items) == 2
        assert t.notifications("bob", types=["poke"]).items == []  # not in the dictionary
        assert t.unread_count("bob", category="talk").count == 2
        # a watermark by category covers every notification of the type, the older one too
        assert t.mark_all_read("bob", category="talk") == 2
        assert t.unread_count("bob").count == 0
        assert t.notifications("bob", unread=False, section="message").items[1].id == items[1].id


def test_a_new_type_added_by_two_units_at_once_has_one_id(store_url: str) -> None:
    """The second unit waits for the first one's row (its insert skips the name) and reads
    the id the first one gave it."""
    db = Database(store_url, pool_size=2)
    first_wrote = threading.Event()
    found: dict[str, int] = {}
    failures: list[BaseException] = []

    def second() -> None:
        try:
            first_wrote.wait(10)
            with db.write() as conn:
                found["second"] = TypeIds(db, conn, None).ids([("poke", "people", "alert")])[
                    "poke"]
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    try:
        other = threading.Thread(target=second)
        other.start()
        with db.write() as conn:
            found["first"] = TypeIds(db, conn, None).ids([("poke", "people", "alert")])["poke"]
            first_wrote.set()
            other.join(0.5)  # on PostgreSQL and MariaDB the second waits for this commit
            if db.backend != "sqlite":
                assert other.is_alive()
        other.join(10)
        assert not failures, failures
        with db.read() as conn:
            stored = conn.execute(select(inbox_types.c.id, inbox_types.c.name)).all()
        assert stored == [(found["first"], "poke")] and found["second"] == found["first"]
    finally:
        db.dispose()


def test_a_unit_rolled_back_leaves_no_type_in_the_cache(store_url: str) -> None:
    db = Database(store_url, pool_size=1)
    try:
        cache = cache_of(db)
        rolled_back: list[Any] = []
        with pytest.raises(RuntimeError), db.write() as conn:
            ids = TypeIds(db, conn, rolled_back.append)
            assert ids.ids([("poke", "people", "alert")]) == ids.ids([("poke", "people",
                                                                       "alert")])
            raise RuntimeError("the unit fails")
        assert len(rolled_back) == 1 and "poke" not in cache.known  # its row went with it
        committed: list[Any] = []
        with db.write() as conn:
            ids = TypeIds(db, conn, committed.append)
            (poke,) = ids.ids([("poke", "people", "alert")]).values()
        assert "poke" not in cache.known
        for callback in committed:  # as the store does once the unit has committed
            callback()
        assert cache.known["poke"] == (poke, "people", "alert")
        with db.read() as conn:
            assert conn.execute(select(inbox_types.c.id)).scalars().all() == [poke]
    finally:
        db.dispose()
