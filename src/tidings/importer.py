"""Back-fill from an existing site (Gazelle's catch-up): JSON Lines of users, events,
subscriptions, follows, mutes and read markers.

One record a line, each with a ``kind``::

    {"kind": "user", "id": "bob", "created_at": "2024-01-02T00:00:00Z"}
    {"kind": "event", "type": "mention", "actor": "alice", "recipients": ["bob"],
     "created_at": "2024-03-01T10:00:00Z", "idempotency_key": "mention:17"}
    {"kind": "subscription", "user": "bob", "type": "*", "object": "page:X"}
    {"kind": "follow", "user": "bob", "other": "alice"}
    {"kind": "mute", "user": "bob", "actor": "spammer"}
    {"kind": "read", "user": "bob", "until": "2024-03-01T00:00:00Z"}

Imported users without a read marker are caught up Gazelle's way: read up to their join date
(or up to the import if none is given). As Gazelle's back-fill, this only fills a missing
witness row: a user the site already has keeps their read state (their unread stays unread).
A user reached by an imported event is registered by its delivery and keeps it unread; users
who appear after the import and were never sent anything start as "read up to now"
(:meth:`Tidings.add_user`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tidings.clock import parse_rfc3339
from tidings.domain.events import Event, check_user_id
from tidings.engine import Tidings
from tidings.exceptions import InvalidInput, TidingsError
from tidings.ports import Tx
from tidings.services.publishing import coerce_event

KINDS = ("user", "event", "subscription", "follow", "mute", "read")


@dataclass
class ImportReport:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    errors: list[str] = field(default_factory=list)


def _time(record: dict[str, Any], key: str, line: int) -> int | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value * 1_000_000)
    try:
        return parse_rfc3339(str(value))
    except ValueError:
        raise InvalidInput(f"line {line}: {key} is not an RFC 3339 time: {value!r}",
                           field=key) from None


def import_lines(tidings: Tidings, lines: Iterable[str], *, stop_on_error: bool = False,
                 progress: Callable[[int], None] | None = None) -> ImportReport:
    """Import records; bad lines are reported (with their number) and skipped."""
    report = ImportReport()
    users: dict[str, int | None] = {}
    read_given: set[str] = set()
    registered: set[str] = set()  # users this import registered (the others were live already)
    batch: list[Event] = []

    def flush() -> None:
        if batch:
            tidings.publish_many(batch)
            report.counts["event"] += len(batch)
            batch.clear()

    for number, text in enumerate(lines, start=1):
        if progress is not None:
            progress(number)
        if not text.strip():
            continue
        try:
            record = json.loads(text)
            if not isinstance(record, dict):
                raise InvalidInput(f"line {number}: a record must be a JSON object")
            kind = record.pop("kind", None)
            if kind not in KINDS:
                raise InvalidInput(f"line {number}: kind must be one of {', '.join(KINDS)}",
                                   field="kind")
            if kind == "event":
                created = _time(record, "created_at", number)
                record.pop("created_at", None)
                record.setdefault("idempotency_key", None)
                event = coerce_event(record)
                event = Event(**{**event.__dict__, "created_at": created})
                tidings.validate_event(event)
                batch.append(event)
                if len(batch) >= 500:
                    flush()
                continue
            flush()
            user = check_user_id(record.get("user", record.get("id")), "user")
            # Known before subscribe/follow see it, so they do not mark it "read up to now".
            if _ensure_user(tidings, user):
                registered.add(user)
            if kind == "user":
                users[user] = _time(record, "created_at", number)
            elif kind == "subscription":
                tidings.subscribe(user, record.get("type", "*"), record.get("object", "*"),
                                  record.get("channels", ["web"]))
                users.setdefault(user, None)
            elif kind == "follow":
                tidings.follow(user, record["other"])
                users.setdefault(user, None)
            elif kind == "mute":
                tidings.mute(user, actor=record.get("actor"), object=record.get("object"))
            elif kind == "read":
                until = _time(record, "until", number)
                if until is None:
                    raise InvalidInput(f"line {number}: read needs until", field="until")
                _set_read(tidings, user, until)
                read_given.add(user)
            report.counts[kind] += 1
        except (TidingsError, ValueError, KeyError, TypeError) as exc:
            message = str(exc) if str(exc).startswith("line") else f"line {number}: {exc}"
            if stop_on_error:
                raise InvalidInput(message) from None
            report.errors.append(message)
    flush()
    now = tidings.clock.now_us()
    for user, joined in users.items():
        if user in registered:
            _register(tidings, user, joined if joined is not None else now,
                      catch_up=user not in read_given, join_date_given=joined is not None)
        elif joined is not None and user not in read_given:
            _back_fill(tidings, user, joined)
    return report


def _set_read(tidings: Tidings, user: str, until: int) -> None:
    def work(tx: Tx) -> None:
        tx.graph.add_user(user, tidings.clock.now_us())
        tx.inbox.set_marker(user, "all", until)

    tidings.store.transact(work)


def _ensure_user(tidings: Tidings, user: str) -> bool:
    """Register ``user`` with no witness row yet; True if they are new."""
    now = tidings.clock.now_us()
    return tidings.store.transact(lambda tx: tx.graph.add_user(user, now))


def _back_fill(tidings: Tidings, user: str, joined: int) -> None:
    """A user the site had before this import: Gazelle's back-fill fills only a missing
    witness row (read up to the join date given), and never moves a user's own read state.
    Without a join date nothing is filled: the import time would mark read what they were
    sent live and have not read."""
    def work(tx: Tx) -> None:
        if not tx.inbox.load_markers_many([user]):
            tx.inbox.set_marker(user, "all", joined)

    tidings.store.transact(work)


def _register(tidings: Tidings, user: str, joined: int, *, catch_up: bool,
              join_date_given: bool = False) -> None:
    def work(tx: Tx) -> None:
        if not tx.graph.add_user(user, joined) and join_date_given:
            # _ensure_user registered the user before its join date was read.
            tx.graph.set_joined(user, joined)
        if catch_up:
            tx.inbox.set_marker(user, "all", joined)

    tidings.store.transact(work)
