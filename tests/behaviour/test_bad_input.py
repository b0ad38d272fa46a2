"""Bad input: the right :mod:`tidings.exceptions` subclass, a message naming the field, and
nothing written."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engines import open_tidings, table_counts
from tidings.engine import Tidings
from tidings.exceptions import (
    InvalidCursor,
    InvalidInput,
    InvalidText,
    InvalidUserId,
    PayloadTooLarge,
    QuotaExceeded,
    TidingsError,
    TooManyRecipients,
    UnknownEventType,
)

MAX_PAYLOAD = 200
MAX_RECIPIENTS = 3


@pytest.fixture
def t(store_url: str) -> Iterator[Tidings]:
    with open_tidings(store_url, max_payload_bytes=MAX_PAYLOAD,
                      max_recipients=MAX_RECIPIENTS) as tidings:
        yield tidings


@pytest.fixture
def seeded(t: Tidings) -> Tidings:
    """Some rows in every kind of table, so 'nothing written' is checked against a real store."""
    t.subscribe("bob", "*", "*")
    t.follow("bob", "alice")
    t.mute("bob", actor="spammer")
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"]})
    t.run_jobs()
    return t


@contextlib.contextmanager
def _case(name: str) -> Iterator[None]:
    """Name the failing case of a loop in pytest's report."""
    try:
        yield
    except BaseException as exc:
        exc.add_note(f"case: {name}")
        raise


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _raises(t: Tidings, kind: type[TidingsError], field: str | None,
            call: Callable[[], Any], *, names: str | None = None) -> None:
    """``call`` raises ``kind`` whose field is ``field`` and whose message names it; no row
    of any table changes."""
    before = table_counts(t)
    with pytest.raises(kind) as error:
        call()
    assert type(error.value) is kind
    if field is not None:
        assert isinstance(error.value, InvalidInput)
        assert error.value.field == field
    assert (names or field or "") in str(error.value)
    assert table_counts(t) == before


EVENTS: list[tuple[str, dict[str, Any], type[TidingsError], str, str | None]] = [
    ("unknown type", {"type": "no-such-type"}, UnknownEventType, "type", "no-such-type"),
    ("type not a string", {"type": 5}, InvalidInput, "type", None),
    ("missing type", {"actor": "alice"}, InvalidInput, "type", None),
    ("unknown field", {"type": "mention", "colour": "red"}, InvalidInput, "colour", None),
    ("malformed actor", {"type": "mention", "actor": "al ice"}, InvalidUserId, "actor", None),
    ("malformed recipient", {"type": "mention", "recipients": ["bob", "b/o/b"]},
     InvalidUserId, "recipients[1]", None),
    ("empty recipient", {"type": "mention", "recipients": [""]}, InvalidUserId,
     "recipients[0]", None),
    ("recipients not a list", {"type": "mention", "recipients": "bob"}, InvalidInput,
     "recipients", None),
    ("malformed exclude", {"type": "mention", "exclude": ["x" * 256]}, InvalidUserId,
     "exclude[0]", None),
    ("too many recipients", {"type": "mention", "recipients": ["a", "b", "c", "d"]},
     TooManyRecipients, "recipients", None),
    ("oversized payload", {"type": "mention", "payload": {"text": "x" * MAX_PAYLOAD}},
     PayloadTooLarge, "payload", None),
    ("payload not an object", {"type": "mention", "payload": [1, 2]}, InvalidInput,
     "payload", None),
    ("payload not JSON", {"type": "mention", "payload": {"when": {1, 2}}}, InvalidInput,
     "payload", None),
    ("object too long", {"type": "mention", "object": "o" * 256}, InvalidInput, "object", None),
    ("object with control characters", {"type": "mention", "object": "page:\n"},
     InvalidInput, "object", None),
    ("idempotency key too long", {"type": "mention", "idempotency_key": "k" * 256},
     InvalidInput, "idempotency_key", None),
]


def test_a_bad_event_is_refused(seeded: Tidings) -> None:
    for name, event, kind, field, names in EVENTS:
        with _case(name):
            _raises(seeded, kind, field, lambda event=event: seeded.publish(event), names=names)


def test_one_bad_event_refuses_the_whole_batch(seeded: Tidings) -> None:
    good = {"type": "mention", "actor": "alice", "recipients": ["bob"]}
    _raises(seeded, TooManyRecipients, "recipients", lambda: seeded.publish_many(
        [good, good, {"type": "mention", "recipients": ["a", "b", "c", "d"]}]))
    _raises(seeded, UnknownEventType, "type", lambda: seeded.publish_many(
        [good, {"type": "nope"}]))


def test_limits_at_the_edge_are_accepted(t: Tidings) -> None:
    t.publish({"type": "mention", "recipients": ["a", "b", "c"],
               "payload": {"t": "x" * (MAX_PAYLOAD - len('{"t":""}'))}})
    assert table_counts(t)["events"] == 1


BAD_CURSORS = [
    "garbage!",
    "x" * 201,
    _b64("t2:1:1"),  # another version
    _b64("t1:1"),
    _b64("t1:a:1"),
    _b64("t1:-1:1"),
    _b64("t1:99999999999999999999999999:1"),  # out of range for every backend
]


def test_a_bad_inbox_cursor_is_refused(seeded: Tidings) -> None:
    for cursor in BAD_CURSORS:
        _raises(seeded, InvalidCursor, "cursor",
                lambda cursor=cursor: seeded.notifications("bob", cursor=cursor))
    assert len(seeded.notifications("bob", cursor="").items) == 1  # empty: from the start


BAD_LIST_CURSORS = ["garbage!", _b64("t1:x:y"), _b64('{"after": 5}'), _b64("[1]"),
                    _b64("t1:1:99999999999999999999999999")]


def test_a_bad_list_cursor_is_refused(seeded: Tidings) -> None:
    t = seeded
    for cursor in BAD_LIST_CURSORS:
        _raises(t, InvalidCursor, "cursor", lambda c=cursor: t.subscriptions("bob", cursor=c))
        _raises(t, InvalidCursor, "cursor", lambda c=cursor: t.following("bob", cursor=c))
        _raises(t, InvalidCursor, "cursor", lambda c=cursor: t.followers("alice", cursor=c))


def test_a_bad_limit_is_refused(seeded: Tidings) -> None:
    for limit in (0, -1, 101, True, "5", 2.0, None):
        for call in (seeded.notifications, seeded.subscriptions, seeded.following,
                     seeded.followers):
            _raises(seeded, InvalidInput, "limit",
                    lambda call=call, limit=limit: call("bob", limit=limit))


def test_a_malformed_user_id_is_refused_everywhere(seeded: Tidings) -> None:
    t = seeded
    for user in ("", "bo b", "x" * 256, "bob/../alice", "alice\n", None, 7):
        _refuses_user(t, user)


def _refuses_user(t: Tidings, user: Any) -> None:
    for call in (
        lambda: t.notifications(user),
        lambda: t.unread_count(user),
        lambda: t.mark_read(user, ["1"]),
        lambda: t.mark_all_read(user),
        lambda: t.mark_seen(user),
        lambda: t.subscribe(user, "*", "*"),
        lambda: t.follow(user, "alice"),
        lambda: t.mute(user, actor="alice"),
        lambda: t.add_user(user),
    ):
        _raises(t, InvalidUserId, "user", call)
    _raises(t, InvalidUserId, "other", lambda: t.follow("bob", user))
    if user is not None:  # None there means "not given"
        _raises(t, InvalidUserId, "actor", lambda: t.mute("bob", actor=user))
        _raises(t, InvalidUserId, "match.actor",
                lambda: t.mark_read_matching("bob", actor=user))


def test_bad_filters_are_refused(seeded: Tidings) -> None:
    t = seeded
    _raises(t, UnknownEventType, "type", lambda: t.notifications("bob", types=["nope"]),
            names="nope")
    _raises(t, UnknownEventType, "type", lambda: t.unread_count("bob", types="mention,nope"),
            names="nope")
    _raises(t, InvalidInput, "section", lambda: t.notifications("bob", section="inbox"))
    _raises(t, InvalidInput, "category", lambda: t.unread_count("bob", category=""))
    _raises(t, InvalidInput, "category", lambda: t.mark_all_read(
        "bob", category="talk", section="alert"))
    _raises(t, InvalidInput, "types", lambda: t.mark_all_read(
        "bob", types=["mention"], category="talk"))


def test_bad_read_state_requests_are_refused(seeded: Tidings) -> None:
    t = seeded
    _raises(t, InvalidInput, "ids", lambda: t.mark_read("bob", ["abc"]), names="'abc'")
    _raises(t, InvalidInput, "ids", lambda: t.mark_read("bob", "1"))
    _raises(t, InvalidInput, "ids", lambda: t.mark_unread("bob", [0]), names="ids: 0")
    _raises(t, InvalidInput, "ids", lambda: t.mark_read("bob", [2**63]), names="id")
    _raises(t, InvalidInput, "ids", lambda: t.mark_read("bob", ["1"] * 1001))
    _raises(t, InvalidInput, "match", lambda: t.mark_read_matching("bob"))
    _raises(t, InvalidInput, "match.object", lambda: t.mark_read_matching("bob", object=""))


def test_bad_graph_requests_are_refused(seeded: Tidings) -> None:
    t = seeded
    _raises(t, UnknownEventType, "type", lambda: t.subscribe("bob", "nope", "*"), names="nope")
    _raises(t, InvalidInput, "object", lambda: t.subscribe("bob", "*", ""))
    _raises(t, InvalidInput, "channels", lambda: t.subscribe("bob", "*", "*", ["pigeon"]),
            names="pigeon")
    _raises(t, InvalidInput, "channels", lambda: t.subscribe("bob", "*", "*", []))
    _raises(t, InvalidInput, "other", lambda: t.follow("bob", "bob"), names="themselves")
    _raises(t, InvalidInput, "actor", lambda: t.mute("bob"))
    _raises(t, InvalidInput, "object", lambda: t.mute("bob", object="o" * 256))
    _raises(t, UnknownEventType, "type", lambda: t.retract(type="nope"))
    _raises(t, InvalidUserId, "actor", lambda: t.retract(actor="a b"))


def test_names_are_matched_in_full() -> None:
    """``$`` matches before a final newline; a name with one is not the name without."""
    from tidings.domain.types import EventType
    from tidings.exceptions import InvalidEventType

    for fields in ({"name": "mention\n"}, {"name": "x", "category": "talk\n"}):
        with _case(repr(fields)), pytest.raises(InvalidEventType):
            EventType(**fields)


# NUL: PostgreSQL keeps none in text; a lone surrogate: no UTF-8 encoder writes one. Either in a
# string that reaches a store is refused as it comes in, on every backend alike.
UNSTORABLE = [
    ("NUL in a payload string", {"payload": {"text": "a\x00b"}}, "payload.text"),
    ("NUL in a payload key", {"payload": {"te\x00xt": 1}}, "payload"),
    ("NUL deep in a payload", {"payload": {"a": [1, {"b": "\x00"}]}}, "payload.a.1.b"),
    ("lone surrogate in a payload", {"payload": {"text": "\ud800"}}, "payload.text"),
    ("NUL in an idempotency key", {"idempotency_key": "k\x00"}, "idempotency_key"),
    ("lone surrogate in an object", {"object": "page:\udc00"}, "object"),
]


def test_unstorable_text_in_an_event_is_refused(seeded: Tidings) -> None:
    for name, fields, field in UNSTORABLE:
        event = {"type": "mention", "actor": "alice", "recipients": ["bob"], **fields}
        with _case(name):
            _raises(seeded, InvalidText, field, lambda event=event: seeded.publish(event))
            _raises(seeded, InvalidText, field,
                    lambda event=event: seeded.publish_many([event]))


def test_unstorable_text_elsewhere_is_refused(seeded: Tidings) -> None:
    t = seeded
    _raises(t, InvalidText, "note", lambda: t.set_preferences("bob", {"note": "a\x00"}))
    _raises(t, InvalidText, "email.timezone", lambda: t.set_preferences(
        "bob", {"email": {"address": "bob@example.org", "timezone": "\ud800"}}))
    _raises(t, InvalidText, "channels", lambda: t.set_preferences(
        "bob", {"channels": {"ta\x00lk": {"web": False}}}))
    _raises(t, InvalidText, "object", lambda: t.subscribe("bob", "*", "page:\ud800"))
    _raises(t, InvalidText, "object", lambda: t.mute("bob", object="page:\udfff"))
    _raises(t, InvalidText, "reason", lambda: t.report_bounce("bob@example.org", "gone\x00"))
    _raises(t, InvalidText, "address", lambda: t.report_bounce("bob\x00@example.org"))


def test_quotas_of_a_user_are_kept(store_url: str) -> None:
    with open_tidings(store_url, max_subscriptions=2, max_preference_categories=2,
                      max_preferences_bytes=1024) as t:
        t.subscribe("bob", "*", "page:1")
        t.subscribe("bob", "*", "page:2")
        _raises(t, QuotaExceeded, None, lambda: t.subscribe("bob", "*", "page:3"),
                names="TIDINGS_MAX_SUBSCRIPTIONS")
        t.subscribe("bob", "*", "page:2", ["web", "email"])  # the same one: no new one
        t.subscribe("carol", "*", "page:3")  # a quota per user
        switches = {name: {"web": False} for name in ("a", "b", "c")}
        _raises(t, InvalidInput, "channels",
                lambda: t.set_preferences("bob", {"channels": switches}))
        _raises(t, InvalidInput, "preferences",
                lambda: t.set_preferences("bob", {"note": "x" * 1024}))
        t.set_preferences("bob", {"channels": {"a": {"web": False}}})
