"""MailStore: bundling windows, mail waiting in batches, the sent log, webhook attempts."""

from __future__ import annotations

import pytest
from contract_kit import key, mail_row, read, write

from tidings import ports
from tidings.clock import FrozenClock
from tidings.domain.views import MailBatchRow


def _batch(store: ports.Store, user: str, kind: str, **query: object) -> list[MailBatchRow]:
    return read(store, lambda tx: tx.mail.batch(user, kind, **query))  # type: ignore[arg-type]


def _events(rows: list[MailBatchRow]) -> list[int]:
    return [r.event_id for r in rows]


def test_bundling_windows(store: ports.Store) -> None:
    assert read(store, lambda tx: tx.mail.last_email_at("ann", key("b"))) is None
    write(store, lambda tx: tx.mail.set_last_email_at("ann", key("b"), 100))
    write(store, lambda tx: tx.mail.set_last_email_at("ann", key("b"), 300))
    write(store, lambda tx: tx.mail.set_last_email_at("ann", key("c"), 200))
    assert read(store, lambda tx: tx.mail.last_email_at("ann", key("b"))) == 300
    assert read(store, lambda tx: tx.mail.last_email_at("ann", key("c"))) == 200
    assert read(store, lambda tx: tx.mail.last_email_at("bob", key("b"))) is None


def test_a_notification_waits_for_mail_once(store: ports.Store) -> None:
    write(store, lambda tx: tx.mail.add_batch([mail_row("ann", 1, priority=5),
                                               mail_row("ann", 1, priority=1)]))
    write(store, lambda tx: tx.mail.add_batch([mail_row("ann", 1, priority=2)]))
    write(store, lambda tx: tx.mail.add_batch([mail_row("ann", 1, kind="bundle")]))
    write(store, lambda tx: tx.mail.add_batch([]))
    assert _batch(store, "ann", "bundle") == []  # once per (user, event), whatever the kind
    (row,) = _batch(store, "ann", "digest")
    assert (row.user_id, row.event_id, row.kind, row.bundle_hash, row.priority,
            row.created_at) == ("ann", 1, "digest", key("b"), 5, 1)
    assert row.id > 0


def test_digests_read_by_priority_then_newest_event(store: ports.Store) -> None:
    write(store, lambda tx: tx.mail.add_batch([
        mail_row("ann", 1, priority=5), mail_row("ann", 2, priority=3),
        mail_row("ann", 3, priority=5), mail_row("ann", 4, priority=3),
        mail_row("ann", 5, kind="bundle"), mail_row("bob", 6)]))
    rows = _batch(store, "ann", "digest")
    assert _events(rows) == [4, 2, 3, 1]
    assert len({r.id for r in rows}) == 4
    assert _events(_batch(store, "ann", "digest", limit=3)) == [4, 2, 3]


def test_bundles_read_newest_event_first(store: ports.Store) -> None:
    write(store, lambda tx: tx.mail.add_batch([
        mail_row("ann", 1, kind="bundle", bundle="x", priority=1),
        mail_row("ann", 3, kind="bundle", bundle="x", priority=9),
        mail_row("ann", 2, kind="bundle", bundle="x", priority=5),
        mail_row("ann", 4, kind="bundle", bundle="y")]))
    assert _events(_batch(store, "ann", "bundle", bundle_hash=key("x"))) == [3, 2, 1]
    assert _events(_batch(store, "ann", "bundle")) == [4, 3, 2, 1]
    assert _events(_batch(store, "ann", "bundle", bundle_hash=key("x"), limit=1)) == [3]
    assert _batch(store, "ann", "bundle", bundle_hash=key("z")) == []


def test_digests_read_up_to_a_creation_time(store: ports.Store) -> None:
    write(store, lambda tx: tx.mail.add_batch([mail_row("ann", 1, created_at=100),
                                               mail_row("ann", 2, created_at=200),
                                               mail_row("ann", 3, created_at=201)]))
    assert _events(_batch(store, "ann", "digest", created_until=200)) == [2, 1]


def test_deleted_and_cancelled_rows_wait_no_more(store: ports.Store) -> None:
    write(store, lambda tx: tx.mail.add_batch([
        mail_row("ann", 1), mail_row("ann", 2), mail_row("ann", 3),
        mail_row("bob", 2, kind="bundle"), mail_row("bob", 4, kind="bundle")]))
    first = _batch(store, "ann", "digest")
    write(store, lambda tx: tx.mail.delete_batch([r.id for r in first if r.event_id == 3]))
    assert _events(_batch(store, "ann", "digest")) == [2, 1]
    write(store, lambda tx: tx.mail.cancel_events([2]))
    assert _events(_batch(store, "ann", "digest")) == [1]
    assert _events(_batch(store, "bob", "bundle")) == [4]
    write(store, lambda tx: tx.mail.delete_batch([]))
    write(store, lambda tx: tx.mail.cancel_events([]))
    # a deleted row's notification may wait again
    write(store, lambda tx: tx.mail.add_batch([mail_row("ann", 3)]))
    assert _events(_batch(store, "ann", "digest")) == [3, 1]


def test_one_recipients_rows_are_cancelled_alone(store: ports.Store) -> None:
    write(store, lambda tx: tx.mail.add_batch([
        mail_row("ann", 1), mail_row("ann", 2), mail_row("annie", 2), mail_row("bob", 2)]))
    write(store, lambda tx: tx.mail.cancel_events([2, 3], user="ann"))
    assert _events(_batch(store, "ann", "digest")) == [1]
    assert _events(_batch(store, "annie", "digest")) == [2]
    assert _events(_batch(store, "bob", "digest")) == [2]


def test_sent_count_counts_a_kind_strictly_after_a_time(store: ports.Store) -> None:
    for at, user, kind in [(100, "ann", "single"), (200, "ann", "single"),
                           (300, "ann", "digest"), (300, "bob", "single")]:
        write(store, lambda tx, at=at, u=user, k=kind: tx.mail.log_sent(
            f"<m{at}{u}@x>", u, k, f"{u}@example.org", "subject", at))
    assert read(store, lambda tx: tx.mail.sent_count("ann", "single", 0)) == 2
    assert read(store, lambda tx: tx.mail.sent_count("ann", "single", 100)) == 1
    assert read(store, lambda tx: tx.mail.sent_count("ann", "single", 200)) == 0
    assert read(store, lambda tx: tx.mail.sent_count("ann", "digest", 0)) == 1
    assert read(store, lambda tx: tx.mail.sent_count("cat", "single", 0)) == 0


def test_webhook_attempts_are_logged(store: ports.Store, clock: FrozenClock) -> None:
    write(store, lambda tx: tx.mail.log_webhook("ann", 1, "https://hook.example/x", 500, 1,
                                                "receiver answered 500", clock.now_us()))
    write(store, lambda tx: tx.mail.log_webhook("ann", 1, "https://hook.example/x", None, 2,
                                                "ConnectError", clock.now_us()))


def test_webhook_endpoint_breakers(store: ports.Store) -> None:
    assert read(store, lambda tx: tx.mail.webhook_endpoint("hook.example")) is None
    write(store, lambda tx: tx.mail.save_webhook_endpoint("hook.example", 1, 0))
    write(store, lambda tx: tx.mail.save_webhook_endpoint("hook.example", 5, 300))
    write(store, lambda tx: tx.mail.save_webhook_endpoint("other.example", 2, 0))
    assert read(store, lambda tx: tx.mail.webhook_endpoint("hook.example")) == (5, 300)
    assert read(store, lambda tx: tx.mail.webhook_endpoint("other.example")) == (2, 0)
    assert read(store, lambda tx: tx.mail.webhook_endpoint("HOOK.example")) is None  # exact
    write(store, lambda tx: tx.mail.save_webhook_endpoint("hook.example", 0, 0))  # forgotten
    assert read(store, lambda tx: tx.mail.webhook_endpoint("hook.example")) is None
    write(store, lambda tx: tx.mail.save_webhook_endpoint("gone.example", 0, 0))
    assert read(store, lambda tx: tx.mail.webhook_endpoint("other.example")) == (2, 0)


def test_mail_state_of_a_failed_unit_is_undone(store: ports.Store) -> None:
    write(store, lambda tx: tx.mail.add_batch([mail_row("ann", 1)]))

    def work(tx: ports.Tx) -> None:
        tx.mail.add_batch([mail_row("ann", 2)])
        tx.mail.cancel_events([1])
        tx.mail.set_last_email_at("ann", key("b"), 100)
        tx.mail.log_sent("<m@x>", "ann", "single", "ann@example.org", "s", 100)
        tx.mail.save_webhook_endpoint("hook.example", 5, 300)
        raise RuntimeError("the unit fails")

    with pytest.raises(RuntimeError):
        write(store, work)
    assert _events(_batch(store, "ann", "digest")) == [1]
    assert read(store, lambda tx: tx.mail.last_email_at("ann", key("b"))) is None
    assert read(store, lambda tx: tx.mail.sent_count("ann", "single", 0)) == 0
    assert read(store, lambda tx: tx.mail.webhook_endpoint("hook.example")) is None
