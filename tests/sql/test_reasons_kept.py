"""Why a notification arrived, as the ``flags`` column keeps it (bits 4-6,
``tidings.domain.flags``): rows written before reasons were kept (0, migration 0035's
default) list with ``reason`` None and no reason filter keeps them; the other bits are left
as they are."""

from __future__ import annotations

from sqlalchemy import select, update

from tidings.domain.flags import REASON_MASK, SAVED, reason_code
from tidings.engine import Tidings
from tidings.store.sql.schema import notifications

n = notifications.c


def test_a_row_without_a_reason_lists_none_and_other_bits_stay(t: Tidings) -> None:
    old = t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
    new = t.publish({"type": "mention", "actor": "carol", "recipients": ["bob"]})
    t.run_jobs()
    engine = t.store.db.engine  # type: ignore[attr-defined]
    with engine.begin() as conn:
        assert dict(conn.execute(select(n.event_id, n.flags).where(n.user_id == "bob")).all()) \
            == {int(old.id): reason_code("recipient"), int(new.id): reason_code("recipient")}
        conn.execute(update(notifications).where(n.event_id == int(old.id)).values(flags=0))
        conn.execute(update(notifications).where(n.event_id == int(new.id))
                     .values(flags=n.flags.op("|")(SAVED)))
    assert [(i.id, i.reason) for i in t.notifications("bob").items] == [(new.id, "recipient"),
                                                                        (old.id, None)]
    assert [i.id for i in t.notifications("bob", participating=True).items] == [new.id]
    assert t.unread_count("bob", reason="recipient").count == 1
    with engine.begin() as conn:
        flags = conn.execute(select(n.flags).where(n.event_id == int(new.id))).scalar_one()
    assert (flags & REASON_MASK, flags & SAVED) == (reason_code("recipient"), SAVED)
