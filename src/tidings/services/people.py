"""A person's data on request (GDPR Art. 15 and 20) and its erasure (Art. 17).

The export: everything tidings keeps about one user, as a stream of records, one JSON object
a line (JSON Lines).

Each record has a ``kind``:

- ``user``: the id and when they joined (where the store registered them);
- ``notification``: each notification they hold, bundle members one by one (``group`` names the
  item a list shows it under), with its title, payload and read state;
- ``read_marker``: each watermark (``all``, ``seen``, a type's, a category's, a section's, the
  read-up-to place);
- ``subscription``, ``follow`` (whom they follow), ``follower`` (who follows them), ``mute``;
- ``preferences``: the stored preferences document;
- ``pending_mail``: notifications waiting in a bundling window or a digest;
- ``bounce``: whether their address is marked bouncing;
- ``push_subscription``: their browsers' Web Push endpoints;
- ``event``: the events they authored that are not retracted.

Records are read a page at a time in short read units, so a large inbox streams without
holding a transaction open for its whole length.

The erasure (:func:`erase`, run by the job :data:`ERASE` in one unit): the follows both ways
go first, each follower's timeline losing the user's posts; then the events they authored are
retracted from every inbox (and their pending mail cancelled, as a retraction does) and
deleted; then the store forgets every record of theirs (:meth:`tidings.ports.Erasure.forget`)
and takes them out of the records that name them among others, last, so that a hot store's
journal is folded with the unit's own writes (:meth:`~tidings.ports.Erasure.unlist`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from tidings.clock import to_rfc3339
from tidings.domain.events import check_user_id
from tidings.jobs.context import Handler, JobContext, Replacements
from tidings.jobs.model import Job, JobSpec
from tidings.ports import Store, Tx
from tidings.services.inbox import InboxService
from tidings.services.publishing import RetractHook

PAGE = 100
KINDS = ("user", "notification", "read_marker", "subscription", "follow", "follower", "mute",
         "preferences", "pending_mail", "bounce", "push_subscription", "event")


ERASE = "erase_user"


def erase_key(user: str) -> str:
    """The unique key of the job erasing ``user``: what ``DELETE /v1/users/{user}`` names.
    A second request while it waits queues nothing more."""
    return f"erase:{user}"


def erase_spec(user: str) -> JobSpec:
    check_user_id(user)
    return JobSpec(ERASE, {"user": user}, unique_key=erase_key(user), priority=8)


def erase(tx: Tx, user: str, now: int, retract_hooks: Sequence[RetractHook], *,
          spare: int | None = None) -> dict[str, int]:
    """Erase everything kept about ``user`` in the unit ``tx`` (the module's docstring says
    in what order); ``spare``: the erasure's own job, left for its completion. Returns how
    many records went or changed, by kind; nothing when there was nothing (again, or a user
    never seen)."""
    check_user_id(user)
    gone: Counter[str] = Counter()
    preferences = tx.settings.preferences(user) or {}
    email = preferences.get("email")
    address = email.get("address") if isinstance(email, dict) else None
    for followers in (True, False):
        while edges := tx.graph.follows(user, followers=followers, after="", limit=PAGE):
            for edge in edges:
                if followers:
                    tx.timeline.remove_source(edge.user, user)
                    tx.graph.remove_follow(edge.user, user)
                else:
                    tx.graph.remove_follow(user, edge.user)
            gone["follower" if followers else "follow"] += len(edges)
    after = 0
    while ids := tx.erasure.authored(user, after_id=after, limit=PAGE):
        tx.events.mark_retracted(ids, now)
        tx.inbox.remove(tx.inbox.keys_for_events(ids))
        for hook in retract_hooks:
            hook(tx, ids)
        tx.events.delete(ids)
        gone["event"] += len(ids)
        after = ids[-1]
    gone.update(tx.erasure.forget(user, [address] if isinstance(address, str) else []))
    gone.update(tx.erasure.unlist(user, spare=spare))
    return {kind: count for kind, count in sorted(gone.items()) if count}


def erase_handler(retract_hooks: Sequence[RetractHook]) -> Handler:
    """The job :data:`ERASE`: :func:`erase` of its user, in the job's unit."""
    def run(ctx: JobContext, tx: Tx, job: Job) -> Replacements:
        erase(tx, str(job.args["user"]), ctx.clock.now_us(), retract_hooks, spare=job.id)
        return None

    return Handler(run=run)


def _at(value: int | None) -> str | None:
    return None if value is None else to_rfc3339(value)


def export(store: Store, inbox: InboxService, user: str) -> Iterator[dict[str, Any]]:
    """Every record kept about ``user``, kind by kind (:data:`KINDS`' order)."""
    check_user_id(user)
    with store.read() as tx:
        joined = tx.graph.joined([user]).get(user)
    yield {"kind": "user", "user": user, "joined_at": _at(joined)}
    yield from _notifications(inbox, user)
    yield from _markers(store, user)
    yield from _graph(store, user)
    yield from _settings(store, user)
    yield from _events(store, user)


def _notifications(inbox: InboxService, user: str) -> Iterator[dict[str, Any]]:
    cursor: str | None = None
    while True:
        page = inbox.notifications(user, limit=PAGE, cursor=cursor, state=None)
        for item in page.items:
            members = [None] if item.count <= 1 else _members(inbox, user, item.id)
            for member in members:
                if member is None:
                    yield {"kind": "notification", "id": item.id, "group": item.id,
                           "type": item.type, "actor": item.actor, "object": item.object,
                           "created_at": item.created_at, "read": item.read,
                           "seen": item.seen, "title": item.title, "payload": item.payload,
                           "archived": item.archived, "saved": item.saved,
                           "snoozed_until": item.snoozed_until}
                else:
                    yield {"kind": "notification", "id": member.id, "group": item.id,
                           "type": item.type, "actor": member.actor, "object": item.object,
                           "created_at": member.created_at, "read": member.read,
                           "title": member.title, "payload": member.payload,
                           "archived": item.archived, "saved": item.saved,
                           "snoozed_until": item.snoozed_until}
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _members(inbox: InboxService, user: str, item_id: str) -> Iterator[Any]:
    cursor: str | None = None
    while True:
        page = inbox.members(user, item_id, limit=PAGE, cursor=cursor)
        yield from page.items
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _markers(store: Store, user: str) -> Iterator[dict[str, Any]]:
    with store.read() as tx:
        markers = tx.inbox.load_markers(user)
    if markers.all:
        yield {"kind": "read_marker", "scope": "all", "until": _at(markers.all)}
    if markers.seen:
        yield {"kind": "read_marker", "scope": "seen", "until": _at(markers.seen)}
    for (kind, name), until in sorted(markers.scoped.items()):
        yield {"kind": "read_marker", "scope": f"{kind}:{name}", "until": _at(until)}
    if markers.position is not None:
        until, created_at, event_id = markers.position
        yield {"kind": "read_marker", "scope": "position", "until": _at(until),
               "up_to": {"id": str(event_id), "created_at": _at(created_at)}}


def _graph(store: Store, user: str) -> Iterator[dict[str, Any]]:
    after_id = 0
    while True:
        with store.read() as tx:
            subscriptions = tx.graph.subscriptions(user, after_id=after_id, limit=PAGE)
        for s in subscriptions:
            yield {"kind": "subscription", "id": str(s.id), "type": s.type, "object": s.object,
                   "channels": list(s.channels), "created_at": _at(s.created_at),
                   "expires_at": _at(s.expires_at)}
        if len(subscriptions) < PAGE:
            break
        after_id = subscriptions[-1].id
    for followers, kind in ((False, "follow"), (True, "follower")):
        after = ""
        while True:
            with store.read() as tx:
                edges = tx.graph.follows(user, followers=followers, after=after, limit=PAGE)
            for edge in edges:
                yield {"kind": kind, "user": edge.user, "created_at": _at(edge.created_at)}
            if len(edges) < PAGE:
                break
            after = edges[-1].user
    with store.read() as tx:
        mutes = tx.graph.mutes(user)
    for kind, value in sorted(mutes):
        yield {"kind": "mute", kind: value}


def _settings(store: Store, user: str) -> Iterator[dict[str, Any]]:
    with store.read() as tx:
        preferences = tx.settings.preferences(user)
        pending = [row for kind in ("bundle", "digest") for row in tx.mail.batch(user, kind)]
        pushes = tx.push.push_subscriptions(user)
        email = (preferences or {}).get("email")
        address = email.get("address") if isinstance(email, dict) else None
        bounced = bool(tx.settings.bounced([address])) if isinstance(address, str) else None
    if preferences is not None:
        yield {"kind": "preferences", "preferences": preferences}
    for row in pending:
        yield {"kind": "pending_mail", "mail": row.kind, "event_id": str(row.event_id),
               "created_at": _at(row.created_at)}
    if bounced is not None:
        yield {"kind": "bounce", "address": address, "bounced": bounced}
    for push in pushes:
        yield {"kind": "push_subscription", "id": str(push.id), "endpoint": push.endpoint,
               "created_at": _at(push.created_at)}


def _events(store: Store, user: str) -> Iterator[dict[str, Any]]:
    after_id = 0
    while True:
        with store.read() as tx:
            ids = tx.events.find_ids(type=None, actor=user, object=None, after_id=after_id,
                                     limit=PAGE)
            events = tx.events.get_many(ids)
        for event_id in ids:
            event = events.get(event_id)
            if event is None:
                continue
            yield {"kind": "event", "id": str(event.id), "type": event.type,
                   "object": event.object, "payload": event.payload,
                   "recipients": event.recipients, "created_at": _at(event.created_at)}
        if len(ids) < PAGE:
            return
        after_id = ids[-1]

