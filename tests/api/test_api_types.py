"""A type declaration that could not be rendered or read back is a 422 over HTTP, and nothing is
stored: ``GET /v1/types`` keeps working for everyone. Types answer with a label, and the list
says which channels deliver. Through a real server on loopback."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from contract import error_of
from servers import LiveServer
from tidings.config import Config
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings

pytest_plugins = ["servers"]

BAD_TYPES = [
    # (request body, the field the error names)
    ({"templates": {"title": "{{ actor "}}, "templates.title"),
    ({"templates": {"body": "{% for x in %}{% endfor %}"}}, "templates.body"),
    ({"templates": {"link": "/{{ object|no_such_filter }}"}}, "templates.link"),
    ({"templates": {"locales": {"de": {"title": "{% if %}"}}}}, "templates.de.title"),
    ({"templates": {"title": "x" * 10_001}}, "templates.title"),
]


@pytest.mark.parametrize(("body", "field"), BAD_TYPES, ids=[f for _, f in BAD_TYPES])
def test_a_template_that_does_not_compile_is_a_422(shared_live: LiveServer, body: dict[str, Any],
                                                   field: str) -> None:
    with shared_live.http() as http:
        response = http.put("/v1/types/bad-type", json=body)
        listed = http.get("/v1/types")

    assert response.status_code == 422, response.text
    error = error_of(response)
    assert field in [detail["field"] for detail in error["details"]]
    assert listed.status_code == 200
    assert "bad-type" not in [t["name"] for t in listed.json()["items"]]


@pytest.mark.parametrize("body", [
    b'{"templates": {"title": "\\ud800"}}',
    b'{"templates": {"title": "ok", "locales": {"de": {"body": "a\\udfffb"}}}}',
])
def test_a_lone_surrogate_is_refused_and_never_stored(shared_live: LiveServer,
                                                      body: bytes) -> None:
    with shared_live.http() as http:
        response = http.put("/v1/types/bad-type", content=body,
                            headers={"content-type": "application/json"})
        listed = http.get("/v1/types")

    assert response.status_code == 422, response.text
    error_of(response)
    assert listed.status_code == 200
    assert "bad-type" not in [t["name"] for t in listed.json()["items"]]


def test_types_show_a_label_and_say_which_channels_deliver(shared_live: LiveServer) -> None:
    with shared_live.http() as http:
        declared = http.put("/v1/types/edit-user-talk", json={
            "label": "Talk page message",
            "description": "Someone left a message on your talk page."})
        plain = http.put("/v1/types/thank-you-edit", json={})
        listed = http.get("/v1/types").json()
        refused = http.put("/v1/types/bad-type", json={"label": ""})

    assert declared.status_code == 200, declared.text
    assert (declared.json()["label"], declared.json()["description"]) == (
        "Talk page message", "Someone left a message on your talk page.")
    assert (plain.json()["label"], plain.json()["description"]) == ("Thank you edit", None)
    labels = {t["name"]: t["label"] for t in listed["items"]}
    assert labels["edit-user-talk"] == "Talk page message"
    assert labels["thank-you-edit"] == "Thank you edit"
    # neither SMTP nor a webhook secret is configured on this server
    assert listed["enabled_channels"] == ["web"]
    assert refused.status_code == 422 and "label" in [
        d["field"] for d in error_of(refused)["details"]]


def test_email_and_webhooks_are_enabled_by_their_settings(tmp_path: Path) -> None:
    def enabled(**settings: Any) -> list[str]:
        config = Config(database_url=f"sqlite:///{tmp_path / 'tidings.db'}", **settings)
        with Tidings(config) as tidings:
            return tidings.enabled_channels

    assert enabled() == ["web"]
    assert enabled(smtp_url="smtp://127.0.0.1:2525") == ["web", "email"]
    assert enabled(webhook_secret="s" * 32) == ["web", "webhook"]


# Every field of a type with a value other than its default, so a field an answer or the
# stored copy drops shows. A field added to EventType or Templates must be added here.
EVERY_FIELD: dict[str, Any] = {
    "category": "staff-news", "section": "message", "priority": 2, "bundle": "actor_object",
    "channels": ["web", "email"], "audience": ["recipients", "actor_followers"],
    "retention_days": 30, "mandatory": True, "label": "Staff news",
    "description": "News for the staff only.", "privacy": "group:staff",
    "queryable": ["team", "lang"], "email_delay_seconds": 900, "email_unless_read": True,
    "push_delay_seconds": 120, "mentions": "mentioned",
    "templates": {
        "title": "{{ actor }} posted staff news", "bundled_title": "{{ actors_text }} posted",
        "body": "{{ payload.text }}", "html": "<b>{{ actor }}</b>", "email_body": "News",
        "link": "/news/{{ object }}",
        "locales": {"de": {"title": "{{ actor }} hat Neuigkeiten", "body": "Neu"}},
    },
}


def test_every_field_of_a_type_round_trips_through_put_and_get(shared_live: LiveServer) -> None:
    assert set(EVERY_FIELD) == {f.name for f in fields(EventType)} - {"name"}
    assert set(EVERY_FIELD["templates"]) == {f.name for f in fields(Templates)}
    declared = EventType.from_dict("staff-news", EVERY_FIELD)
    default = EventType("staff-news")
    assert [f.name for f in fields(EventType)
            if getattr(declared, f.name) == getattr(default, f.name)] == ["name"]
    assert [f.name for f in fields(Templates)
            if getattr(declared.templates, f.name) == getattr(default.templates, f.name)] == []

    with shared_live.http() as http:
        put = http.put("/v1/types/staff-news", json=EVERY_FIELD)
        got = http.get("/v1/types/staff-news")
        listed = http.get("/v1/types")

    assert put.status_code == got.status_code == listed.status_code == 200, put.text
    (item,) = [t for t in listed.json()["items"] if t["name"] == "staff-news"]
    for answer in (put.json(), got.json(), item):
        assert answer["name"] == "staff-news"
        assert EventType.from_dict("staff-news", {
            k: v for k, v in answer.items() if k != "name"}) == declared
    with shared_live.tidings.store.read() as tx:
        stored = dict(tx.settings.load_types())
    assert EventType.from_dict("staff-news", json.loads(stored["staff-news"])) == declared


def test_a_type_without_a_privacy_rule_answers_none(shared_live: LiveServer) -> None:
    with shared_live.http() as http:
        answer = http.put("/v1/types/open-news", json={"audience": ["recipients"]}).json()
        refused = http.put("/v1/types/bad-news", json={"privacy": "everyone"})

    assert answer["privacy"] is None and answer["queryable"] == []
    assert refused.status_code == 422 and "privacy" in [
        d["field"] for d in error_of(refused)["details"]]


def test_subscribing_to_a_type_without_subscribers_is_a_422(shared_live: LiveServer) -> None:
    with shared_live.http() as http:
        refused = http.post("/v1/users/bob/subscriptions", json={"type": "mention"})

    assert refused.status_code == 422, refused.text
    assert [d["field"] for d in error_of(refused)["details"]] == ["type"]
    assert "object_subscribers" in error_of(refused)["message"]
