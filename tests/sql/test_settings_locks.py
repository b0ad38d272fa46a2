"""A user's settings write does not wait on a fan-out that holds their ``users`` row.

Fan-out holds the rows of the users it writes to until it commits (MariaDB/MySQL:
``InboxStore.hold`` locks them in key order, and the insert's upsert raises their inbox bound).
A settings write of one of those users must not queue behind it: it has no rule to share with
fan-out, only the user's registration to check. Checked on MariaDB with two real
connections: the settings write's session has a lock-wait timeout of 0, so a wait fails at
once (as the store's lock-wait error) instead of being timed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from engines import open_tidings
from tidings.domain.bundling import bundle_hash
from tidings.domain.views import Delivery
from tidings.engine import Tidings
from tidings.ports import Tx

# the session setting under which a wait for a row lock fails at once (PostgreSQL: a lock
# wait longer than 1 ms)
NO_LOCK_WAITS = {"mysql": "SET SESSION innodb_lock_wait_timeout = 0",
                 "postgresql": "SET lock_timeout = 1"}


@pytest.fixture
def impatient(store_url: str, backend: str) -> Iterator[Tidings]:
    """A second engine whose connections never wait for a row lock."""
    with open_tidings(store_url) as other:
        @event.listens_for(other.store.db.engine, "connect")
        def no_lock_waits(dbapi_connection: Any, _record: Any) -> None:
            with dbapi_connection.cursor() as cursor:
                cursor.execute(NO_LOCK_WAITS[backend])
            if backend == "postgresql":
                dbapi_connection.commit()

        other.store.db.engine.dispose()
        yield other


@pytest.mark.parametrize("backend", ["mysql", "postgresql"])
def test_a_settings_write_does_not_wait_on_a_held_fan_out(
        store_url: str, backend: str, impatient: Tidings) -> None:
    with open_tidings(store_url) as t:
        t.set_preferences("bob", {"locale": "en"})  # bob has his users row
        stored = t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
        with t.store.read() as tx:
            fired = tx.events.get(int(stored.id))
        assert fired is not None
        held = threading.Event()
        release = threading.Event()
        written: list[list[str]] = []

        def fan_out(tx: Tx) -> None:
            # what a fan-out unit does to bob's row: hold it, then write to his inbox
            tx.inbox.hold(["bob"])
            delivery = Delivery(
                event_id=fired.id, created_at=fired.created_at, type=fired.type,
                category="mention", section="alert", actor=fired.actor, object=fired.object,
                bundle_hash=bundle_hash("none", fired.type, fired.actor, fired.object,
                                        fired.id), bundled=False)
            written.append(tx.inbox.deliver_many([(delivery, ["bob"])])[0])
            held.set()
            assert release.wait(30)

        unit = threading.Thread(target=t.store.transact, args=(fan_out,))
        unit.start()
        try:
            assert held.wait(10)
            prefs = impatient.set_preferences("bob", {"locale": "de",
                                                      "muted": {"actors": ["carl"]}})
        finally:
            release.set()
            unit.join(30)
        assert prefs["locale"] == "de"
        assert written == [["bob"]]
        assert t.get_preferences("bob")["muted"] == {"actors": ["carl"], "objects": []}
        assert [n.actor for n in t.notifications("bob").items] == ["alice"]
