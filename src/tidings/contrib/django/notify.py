"""Publishing from a Django site: after its transaction commits, never for a rolled-back save."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Model
from django.db.models.signals import post_delete, post_save

from tidings.contrib.django.runtime import get_tidings
from tidings.domain.events import Event

log = logging.getLogger("tidings.django")


def publish(event: Event | Mapping[str, Any], *, using: str | None = None) -> None:
    """Publish ``event`` once the current transaction of database ``using`` commits (at once
    outside a transaction); nothing is published if it rolls back."""
    transaction.on_commit(lambda: get_tidings().publish(event), using=using)


def retract(*, type: str | None = None, actor: str | None = None, object: str | None = None,
            using: str | None = None) -> None:
    """Retract the notifications of matching events once the transaction commits."""
    transaction.on_commit(
        lambda: get_tidings().retract(type=type, actor=actor, object=object), using=using)


Value = Callable[[Any], Any] | str | None


class Notify:
    """Turn a model's saves into events and its deletions into retractions::

        Notify(on=Comment, type="comment-posted",
               actor=lambda c: str(c.author_id), object=lambda c: f"post:{c.post_id}",
               recipients=lambda c: [str(c.post.author_id)],
               payload=lambda c: {"object_title": c.post.title, "excerpt": c.text[:140]})

    Each of ``actor``, ``object``, ``recipients`` and ``payload`` is a function of the instance
    (or a fixed value). By default only a created instance publishes (``on_update=True`` makes
    every save publish); deleting the instance retracts the events of its type, actor and
    object (``retract_on_delete=False`` keeps them). The event's idempotency key is the model,
    the primary key and, for updates, nothing more: a retried save does not publish twice.
    Returns nothing; keep the object if you want to :meth:`disconnect` it later.
    """

    def __init__(self, *, on: type[Model], type: str, actor: Value = None, object: Value = None,
                 recipients: Value = None, payload: Value = None, on_update: bool = False,
                 retract_on_delete: bool = True,
                 when: Callable[[Any], bool] | None = None) -> None:
        self.model = on
        self.type = type
        self.actor, self.object, self.recipients, self.payload = actor, object, recipients, payload
        self.on_update = on_update
        self.retract_on_delete = retract_on_delete
        self.when = when
        self._uid = f"tidings.notify:{on._meta.label}:{type}"
        post_save.connect(self._saved, sender=on, dispatch_uid=self._uid, weak=False)
        if retract_on_delete:
            post_delete.connect(self._deleted, sender=on, dispatch_uid=self._uid, weak=False)

    def disconnect(self) -> None:
        post_save.disconnect(sender=self.model, dispatch_uid=self._uid)
        post_delete.disconnect(sender=self.model, dispatch_uid=self._uid)

    def event(self, instance: Any, *, created: bool) -> Event:
        recipients = _value(self.recipients, instance)
        key = f"{self.model._meta.label_lower}:{instance.pk}:{self.type}"
        return Event(
            type=self.type,
            actor=_text(_value(self.actor, instance)),
            object=_text(_value(self.object, instance)),
            recipients=[str(r) for r in _iterable(recipients)],
            payload=dict(_value(self.payload, instance) or {}),
            idempotency_key=key if created else None,
        )

    def _saved(self, sender: type[Model], instance: Any, created: bool, using: str,
               raw: bool = False, **_: Any) -> None:
        if raw or not (created or self.on_update):
            return  # fixtures loading, or an update this rule does not announce
        if self.when is not None and not self.when(instance):
            return
        publish(self.event(instance, created=created), using=using)

    def _deleted(self, sender: type[Model], instance: Any, using: str, **_: Any) -> None:
        event = self.event(instance, created=False)
        if event.object is None and event.actor is None:
            log.warning("%s: a deleted %s has no actor or object to retract by",
                        self._uid, self.model._meta.label)
            return
        retract(type=self.type, actor=event.actor, object=event.object, using=using)


def _value(value: Value, instance: Any) -> Any:
    return value(instance) if callable(value) else value


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _iterable(value: Any) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return list(value) if isinstance(value, Iterable) else (value,)
