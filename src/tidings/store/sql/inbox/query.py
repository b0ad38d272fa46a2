"""The WHERE conditions of inbox reads on SQL: filters (types, category, section, read state,
actor, object, event id bounds, queryable payload fields, reasons), places in the inbox's order, and
matches by (actor, type, object). A type, category or section is the rows' ``type_id`` among
the ids the types dictionary gives it (:mod:`.types`)."""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, exists, or_, true

from tidings.domain.flags import REASON_MASK, reason_code
from tidings.domain.readstate import Markers
from tidings.domain.views import Filters
from tidings.store.sql.inbox import markers as readmarkers
from tidings.store.sql.inbox import types as inboxtypes
from tidings.store.sql.inbox.states import state_condition
from tidings.store.sql.schema import event_fields, notifications

n = notifications.c


def filter_conditions(user: str, filters: Filters, markers: Markers) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [n.user_id == user, n.bundle_base == true()]
    if filters.types:
        conditions.append(inboxtypes.named(filters.types))
    if filters.category is not None:
        conditions.append(inboxtypes.of("category", filters.category))
    if filters.section is not None:
        conditions.append(inboxtypes.of("section", filters.section))
    if filters.unread is True:
        conditions.append(readmarkers.unread_condition(markers))
    elif filters.unread is False:
        conditions.append(~readmarkers.unread_condition(markers))
    if filters.actor is not None:
        conditions.append(n.actor == filters.actor)
    if filters.object is not None:
        conditions.append(n.object == filters.object)
    if filters.max_id is not None:
        conditions.append(n.event_id < filters.max_id)
    if filters.since_id is not None:
        conditions.append(n.event_id > filters.since_id)
    if filters.state is not None:
        conditions.append(state_condition(filters.state))
    if filters.reasons is not None:  # the reason's bits of the row's flags
        conditions.append(n.flags.op("&")(REASON_MASK).in_(
            [reason_code(r) for r in filters.reasons] or [-1]))
    f = event_fields.c
    for name, value in filters.fields:  # a primary-key probe per base row read
        conditions.append(exists().where(f.event_id == n.event_id, f.name == name,
                                         f.value == value))
    return conditions


def before_place(place: tuple[int, int]) -> ColumnElement[bool]:
    """Strictly before ``place`` (created_at, event id) in the inbox's order."""
    created, event_id = place
    return or_(n.created_at < created, and_(n.created_at == created, n.event_id < event_id))


def match_conditions(actor: str | None, type: str | None,
                      object: str | None) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if actor is not None:
        conditions.append(n.actor == actor)
    if type is not None:
        conditions.append(inboxtypes.of("type", type))
    if object is not None:
        conditions.append(n.object == object)
    return conditions
