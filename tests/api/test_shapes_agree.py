"""The shapes a response is declared in agree: the engine's view, the HTTP schema and the
client's typed dict name the same fields with the same types.

The three are written by hand on purpose (the client loads nothing of the server, the schema
carries OpenAPI descriptions), so this test is what keeps them from drifting apart.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from tidings.api.schemas import errors as error_schemas
from tidings.api.schemas import events as event_schemas
from tidings.api.schemas import graph as graph_schemas
from tidings.api.schemas import inbox as inbox_schemas
from tidings.api.schemas import mail as mail_schemas
from tidings.api.schemas import types as types_schemas
from tidings.client import _models as client
from tidings.domain import views


def schema_fields(model: type[BaseModel]) -> dict[str, Any]:
    return {name: field.annotation for name, field in model.model_fields.items()}


def client_fields(shape: type) -> dict[str, Any]:
    return typing.get_type_hints(shape)


def view_fields(view: type) -> dict[str, Any]:
    hints = typing.get_type_hints(view)
    return {field.name: hints[field.name] for field in dataclasses.fields(view)}


# (HTTP schema, client shape): every response body the client types.
RESPONSES = [
    (inbox_schemas.NotificationOut, client.Notification),
    (inbox_schemas.UnreadCountOut, client.UnreadCount),
    (graph_schemas.TimelineEvent, client.TimelineEvent),
    (graph_schemas.SubscriptionOut, client.Subscription),
    (graph_schemas.FollowOut, client.Follow),
    (graph_schemas.Following, client.FollowState),
    (event_schemas.Accepted, client.Accepted),
    (mail_schemas.Bounce, client.Bounce),
]


@pytest.mark.parametrize(("schema", "shape"), RESPONSES, ids=lambda s: s.__name__)
def test_client_shapes_match_the_http_schema(schema: type[BaseModel], shape: type) -> None:
    assert client_fields(shape) == schema_fields(schema)


def test_the_error_body_matches() -> None:
    declared = client_fields(client.ErrorBody)
    served = schema_fields(error_schemas.ErrorBody)
    assert set(declared) == set(served)


def test_a_listed_notification_is_what_the_engine_returns() -> None:
    assert view_fields(views.Notification) == schema_fields(inbox_schemas.NotificationOut)


def test_a_timeline_entry_carries_every_field_the_schema_serves() -> None:
    """Ids and times are numbers in the engine and strings on the wire; the names agree."""
    assert set(view_fields(views.TimelineEntry)) == set(schema_fields(graph_schemas.TimelineEvent))


def test_an_unread_count_of_the_engine_fits_the_schema() -> None:
    engine = view_fields(views.UnreadCount)
    served = schema_fields(inbox_schemas.UnreadCountOut)
    assert {name: served[name] for name in engine} == engine


def test_a_type_as_the_client_types_it_names_every_field_the_schema_serves() -> None:
    """The schema's field types carry patterns and bounds; the names agree."""
    assert set(client_fields(client.EventTypeInfo)) == set(schema_fields(types_schemas.TypeOut))
