"""Event types as data: from a TOML file or a library call, validated with errors that name the
field; an unknown type is a clear error. The first half is pure; the second runs on every
backend, because declared types are stored so that every process sees them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engines import event_ids, inbox_of, open_tidings
from tidings.domain.types import EventType, Templates, TypeRegistry, load_types_file
from tidings.engine import Tidings
from tidings.exceptions import ConfigError, InvalidEventType, UnknownEventType

WIKI = """
[types.page-linked]
category = "page-linked"
section = "alert"
priority = 5
bundle = "object"
audience = ["recipients", "object_subscribers"]
channels = ["web", "email"]
retention_days = 30
[types.page-linked.templates]
title = "{{ object_title }} was linked by {{ actors_text }}"
bundled_title = "{{ object_title }} was linked by {{ actors_text }} (bundled)"

[types.user-talk]
category = "talk"
section = "message"
priority = 1
audience = ["recipients"]
mandatory = true
[types.user-talk.templates]
title = "{{ actor }} left a message on {{ object_title }}"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "types.toml"
    path.write_text(text, encoding="utf-8")
    return path


# -- pure: declaring and validating ------------------------------------------------------------

def test_a_toml_file_declares_types(tmp_path: Path) -> None:
    linked, talk = load_types_file(_write(tmp_path, WIKI))

    assert linked == EventType(
        name="page-linked", category="page-linked", section="alert", priority=5,
        bundle="object", channels=("web", "email"),
        audience=("recipients", "object_subscribers"), retention_days=30,
        templates=Templates(
            title="{{ object_title }} was linked by {{ actors_text }}",
            bundled_title="{{ object_title }} was linked by {{ actors_text }} (bundled)"),
    )
    assert (talk.name, talk.category, talk.section, talk.priority, talk.audience,
            talk.mandatory, talk.bundle, talk.channels) == (
        "user-talk", "talk", "message", 1, ("recipients",), True, "none", ("web",))


def test_a_type_survives_a_round_trip_through_a_dict(tmp_path: Path) -> None:
    for event_type in load_types_file(_write(tmp_path, WIKI)):
        data = event_type.to_dict()
        data.pop("name")

        assert EventType.from_dict(event_type.name, data) == event_type


BAD_TABLES: list[tuple[dict[str, Any], str]] = [
    ({"colour": "red"}, "colour"),
    ({"section": "sidebar"}, "section"),
    ({"section": 3}, "section"),
    ({"category": "has space"}, "category"),
    ({"priority": 0}, "priority"),
    ({"priority": 11}, "priority"),
    ({"priority": "high"}, "priority"),
    ({"priority": True}, "priority"),
    ({"bundle": "page"}, "bundle"),
    ({"audience": ["everyone"]}, "audience"),
    ({"audience": []}, "audience"),
    ({"audience": "recipients"}, "audience"),
    ({"channels": ["pigeon"]}, "channels"),
    ({"channels": [1]}, "channels"),
    ({"retention_days": 0}, "retention_days"),
    ({"retention_days": True}, "retention_days"),
    ({"mandatory": "yes"}, "mandatory"),
    ({"templates": "hello"}, "templates"),
    ({"templates": {"subject": "x"}}, "templates.subject"),
    ({"templates": {"title": 5}}, "templates.title"),
    ({"label": ""}, "label"),
    ({"label": 5}, "label"),
    ({"label": "x" * 81}, "label"),
    ({"description": "two\nlines"}, "description"),
]


@pytest.mark.parametrize(("table", "field"), BAD_TABLES, ids=[f for _, f in BAD_TABLES])
def test_a_bad_declaration_names_the_field(table: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidEventType) as error:
        EventType.from_dict("bad-type", table)

    assert error.value.field == field
    assert "'bad-type'" in str(error.value)
    assert field.split(".")[-1].rstrip("s") in str(error.value)


@pytest.mark.parametrize(("table", "field"), BAD_TABLES, ids=[f for _, f in BAD_TABLES])
def test_a_bad_types_file_names_the_type_and_field(tmp_path: Path, table: dict[str, Any],
                                                   field: str) -> None:
    lines = [f"{key} = {json.dumps(value)}" for key, value in table.items()
             if not isinstance(value, dict)]
    templates = {k: v for k, v in table.items() if isinstance(v, dict)}
    text = "[types.bad-type]\n" + "\n".join(lines) + "\n"
    for key, sub in templates.items():
        text += f"[types.bad-type.{key}]\n" + "".join(
            f"{k} = {json.dumps(v)}\n" for k, v in sub.items())
    path = _write(tmp_path, text)

    with pytest.raises(ConfigError) as error:
        load_types_file(path)

    message = str(error.value)
    assert message.startswith("TIDINGS_TYPES_FILE")
    assert "'bad-type'" in message
    assert field.split(".")[-1].rstrip("s") in message


@pytest.mark.parametrize(("text", "names"), [
    (None, "does not exist"),
    ("[types.x\n", "not valid TOML"),
    ("[other]\na = 1\n", "[types.NAME]"),
    ("types = 3\n", "[types.NAME]"),
    ("[types]\nx = 3\n", "[types.x] must be a table"),
])
def test_a_broken_types_file_says_what_is_wrong(tmp_path: Path, text: str | None,
                                                names: str) -> None:
    path = tmp_path / "missing.toml" if text is None else _write(tmp_path, text)

    with pytest.raises(ConfigError, match=r"TIDINGS_TYPES_FILE") as error:
        load_types_file(path)

    assert names in str(error.value)


@pytest.mark.parametrize("name", ["", "*", "has space", "x" * 65, "ünï", "mention\n", "\ud800"])
def test_a_bad_type_name_is_refused(name: str) -> None:
    with pytest.raises(InvalidEventType) as error:
        EventType(name=name)

    assert error.value.field == "name"


def test_a_category_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(InvalidEventType) as error:
        EventType(name="x", category="talk\n")

    assert error.value.field == "category"


BAD_TEMPLATES: list[tuple[dict[str, Any], str]] = [
    ({"title": "{{ actor "}, "templates.title"),
    ({"title": "{% for x in %}{% endfor %}"}, "templates.title"),
    ({"bundled_title": "{% if %}"}, "templates.bundled_title"),
    ({"body": "{% endfor %}"}, "templates.body"),
    ({"html": "<b>{{ actor }</b>"}, "templates.html"),
    ({"email_body": "{% block %}"}, "templates.email_body"),
    ({"link": "/{{ object|no_such_filter }}"}, "templates.link"),
    ({"title": "{{ actor is no_such_test }}"}, "templates.title"),
    ({"de": {"title": "{{ actor "}}, "templates.de.title"),
    ({"title": "x" * 10_001}, "templates.title"),
    ({"title": "\ud800"}, "templates.title"),
    ({"title": "ok", "body": "caf\udce9"}, "templates.body"),
    ({"de": {"bundled_title": "a\udfffb"}}, "templates.de.bundled_title"),
    ({"locales": {"de": {"link": "\ud800/x"}}}, "templates.de.link"),
]


@pytest.mark.parametrize(("templates", "field"), BAD_TEMPLATES,
                         ids=[f"{f}-{i}" for i, (_, f) in enumerate(BAD_TEMPLATES)])
def test_a_bad_template_is_refused_when_the_type_is_declared(templates: dict[str, Any],
                                                             field: str) -> None:
    with pytest.raises(InvalidEventType) as error:
        EventType.from_dict("bad-type", {"templates": templates})

    assert error.value.field == field
    assert field in str(error.value)
    str(error.value).encode("utf-8")  # the message itself can be sent


@pytest.mark.parametrize(("templates", "field"), [
    (Templates(title="{{ actor "), "templates.title"),
    (Templates(link="{% if %}"), "templates.link"),
    (Templates(body="\ud800"), "templates.body"),
    (Templates(locales={"de": {"title": "\udfff"}}), "templates.de.title"),
    (Templates(locales={"de": {"subject": "x"}}), "templates.de.subject"),
    (Templates(locales={"\ud800": {"title": "x"}}), "templates.'\\ud800'"),
    (Templates(locales={"de\n": {"title": "x"}}), "templates.'de\\n'"),
])
def test_a_type_built_in_code_is_checked_the_same_way(templates: Templates, field: str) -> None:
    with pytest.raises(InvalidEventType) as error:
        EventType(name="bad-type", templates=templates)

    assert error.value.field == field
    str(error.value).encode("utf-8")


def test_a_bad_template_in_a_types_file_names_the_field(tmp_path: Path) -> None:
    path = _write(tmp_path, '[types.x]\n[types.x.templates]\ntitle = "{{ actor "\n')

    with pytest.raises(ConfigError, match=r"TIDINGS_TYPES_FILE: .*templates\.title"):
        load_types_file(path)


def test_every_declared_type_reads_back_from_json_in_utf8(tmp_path: Path) -> None:
    for event_type in load_types_file(_write(tmp_path, WIKI)):
        text = json.dumps(event_type.to_dict(), ensure_ascii=False).encode("utf-8")
        data = json.loads(text)

        assert EventType.from_dict(data.pop("name"), data) == event_type


def test_an_unknown_type_is_a_clear_error() -> None:
    registry = TypeRegistry([EventType(name="mention"), EventType(name="edit")])

    with pytest.raises(UnknownEventType) as error:
        registry.get("mentoin")

    assert error.value.field == "type"
    assert str(error.value) == (
        "unknown event type 'mentoin'; declare it first (known: edit, mention)")
    assert "mention" in registry
    assert [t.name for t in registry] == ["edit", "mention"]


# -- on every backend: types reach the engine and every process --------------------------------

def test_types_from_the_file_in_config_are_used(any_store_url: str, tmp_path: Path) -> None:
    with open_tidings(any_store_url, types=(), types_file=str(_write(tmp_path, WIKI))) as t:
        t.publish({"type": "user-talk", "actor": "alice", "object": "talk:bob",
                   "recipients": ["bob"]})
        t.run_jobs()

        (item,) = t.notifications("bob").items
        assert (item.category, item.section, item.title) == (
            "talk", "message", "alice left a message on bob")
        assert [t.name for t in t.types] == ["page-linked", "user-talk"]


def test_a_bad_types_file_stops_start_up(any_store_url: str, tmp_path: Path) -> None:
    path = _write(tmp_path, '[types.x]\nsection = "sidebar"\n')

    with pytest.raises(ConfigError, match="section"):
        open_tidings(any_store_url, types=(), types_file=str(path))


def test_a_type_declared_in_code_is_seen_by_every_process(any_store_url: str) -> None:
    with (open_tidings(any_store_url, types=()) as one,
          open_tidings(any_store_url, types=()) as two):
        one.define_type(EventType(name="badge", category="awards", audience=("recipients",),
                                  templates=Templates(title="{{ actor }} gave you a badge")))

        two.publish({"type": "badge", "actor": "alice", "recipients": ["bob"]})  # looked up
        two.run_jobs()

        (item,) = two.notifications("bob").items
        assert (item.type, item.category, item.title) == (
            "badge", "awards", "alice gave you a badge")
        assert two.get_type("badge") == one.get_type("badge")


def test_redeclaring_a_type_replaces_it_everywhere(any_store_url: str) -> None:
    with (open_tidings(any_store_url, types=()) as one,
          open_tidings(any_store_url, types=()) as two):
        one.define_type(EventType(name="badge", category="awards", audience=("recipients",)))
        two.load_types()
        one.define_type(EventType(name="badge", category="prizes", section="message",
                                  audience=("recipients",)))

        two.load_types()
        two.publish({"type": "badge", "actor": "alice", "recipients": ["bob"]})
        two.run_jobs()

        (item,) = two.notifications("bob").items
        assert (item.category, item.section) == ("prizes", "message")
        with two.store.read() as tx:
            (stored,) = tx.settings.load_types()
        assert stored[0] == "badge"
        assert json.loads(stored[1])["category"] == "prizes"


def test_an_unknown_type_is_refused_on_every_backend(any_store_url: str) -> None:
    with open_tidings(any_store_url) as t:
        with pytest.raises(UnknownEventType, match="'badge'"):
            t.publish({"type": "badge", "recipients": ["bob"]})
        with pytest.raises(UnknownEventType):
            t.subscribe("bob", "badge", "*")

        assert event_ids(t) == []
        assert t.subscriptions("bob").items == []
        assert inbox_of(t, "bob") == []


def test_a_label_is_declared_or_made_from_the_name() -> None:
    talk = EventType.from_dict("edit-user-talk", {"label": "Talk page message",
                                                  "description": "A message on your talk page."})
    assert (talk.display_label, talk.description) == ("Talk page message",
                                                      "A message on your talk page.")
    assert EventType.from_dict(talk.name, {k: v for k, v in talk.to_dict().items()
                                           if k != "name"}) == talk
    assert EventType("thank-you-edit").display_label == "Thank you edit"
    assert EventType("page.linked_by:bot").display_label == "Page linked by bot"
    assert EventType("mention").display_label == "Mention"
    assert EventType("ping", label="Glocke \U0001F514 \U0009CEAF").label  # any one line


def test_declared_types_are_stored_at_start_and_the_stored_copy_is_the_type(
        any_store_url: str, tmp_path: Path) -> None:
    """docs/types.md's one rule: a process stores the types it declares (file, then code) as
    it starts, replacing stored copies; then the stored copy is the type everywhere, until a
    process declaring it starts again."""
    path = _write(tmp_path, WIKI)
    in_code = EventType(name="user-talk", category="talk-in-code", audience=("recipients",))
    with open_tidings(any_store_url, types=(in_code,), types_file=str(path)) as app:
        with app.store.read() as tx:
            stored = {name: json.loads(text) for name, text in tx.settings.load_types()}
        assert sorted(stored) == ["page-linked", "user-talk"]
        assert stored["user-talk"]["category"] == "talk-in-code"  # code wins over the file

        with open_tidings(any_store_url, types=()) as other:  # a worker: no types of its own
            assert other.get_type("user-talk") == in_code
            assert other.get_type("page-linked") == app.get_type("page-linked")
            other.define_type(EventType(name="user-talk", category="talk-by-api",
                                        audience=("recipients",)))
        app.load_types()  # as GET /v1/types does: the stored copy, not stored again
        assert app.get_type("user-talk").category == "talk-by-api"

    with open_tidings(any_store_url, types=(in_code,)) as restarted:
        assert restarted.get_type("user-talk").category == "talk-in-code"
        assert restarted.get_type("page-linked").category == "page-linked"  # kept, stored


def test_open_reads_the_tidings_variables_as_the_constructor_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One configuration path: ``TIDINGS_*`` variables, then keyword settings over them; the
    URL given to ``open`` wins over ``TIDINGS_DATABASE_URL``."""
    monkeypatch.setenv("TIDINGS_TYPES_FILE", str(_write(tmp_path, WIKI)))
    monkeypatch.setenv("TIDINGS_CHUNK_SIZE", "7")
    monkeypatch.setenv("TIDINGS_DATABASE_URL", f"sqlite:///{tmp_path / 'not-this.db'}")
    url = f"sqlite:///{tmp_path / 'tidings.db'}"

    with Tidings.open(url, migrate=True) as t:
        assert t.get_type("user-talk").category == "talk"
        assert (t.config.database_url, t.config.chunk_size) == (url, 7)
    with Tidings.open(url, chunk_size=3) as t:
        assert t.config.chunk_size == 3
    assert not (tmp_path / "not-this.db").exists()
