"""Titles in text and HTML, plural forms in two languages, and no markup from payloads."""

from __future__ import annotations

import pytest

from tidings.domain.rendering import RenderContext, actors_text, render_all
from tidings.domain.types import EventType
from tidings.exceptions import InvalidEventType
from tidings.i18n import available_locales, normalise_locale

LINKED = EventType.from_dict("page-linked", {"bundle": "object", "templates": {
    "title": "{{ object_title }} was linked by {{ actors_text }}",
    "bundled_title": "{{ object_title }} was linked by {{ actors_text }}",
    "html": "<b>{{ object_title }}</b> was linked by {{ actors_text }}",
    "body": "From {{ payload.from }}",
    "link": "/wiki/{{ object }}",
    "de": {"bundled_title": "{{ actors_text }} haben {{ object_title }} verlinkt"},
}})


def ctx(actors: list[str], others: int, count: int = 1, **payload: str) -> RenderContext:
    return RenderContext(type="page-linked", actor=actors[0], object="page:San_Francisco",
                         payload=payload, actors=actors, count=count, others=others)


@pytest.mark.parametrize(("others", "english", "german"), [
    (0, "Carol", "Carol"),
    (1, "Carol and 1 other", "Carol und 1 weitere Person"),
    (2, "Carol and 2 others", "Carol und 2 weitere Personen"),
    (98, "Carol and 98 others", "Carol und 98 weitere Personen"),
    (99, "Carol and 99+ others", "Carol und 99+ weitere Personen"),
    (500, "Carol and 99+ others", "Carol und 99+ weitere Personen"),
])
def test_plural_forms(others: int, english: str, german: str) -> None:
    assert actors_text(["Carol", "Dave"], others, "en") == english
    assert actors_text(["Carol", "Dave"], others, "de") == german


def test_single_and_bundled_titles_in_two_languages() -> None:
    one = render_all(LINKED, ctx(["Carol"], 0, from_="x"))
    assert one.title == "San Francisco was linked by Carol"
    many = render_all(LINKED, ctx(["Carol", "A", "B"], 2, count=3), "de")
    assert many.title == "Carol und 2 weitere Personen haben San Francisco verlinkt"
    # fields a locale does not give fall back to the default language
    assert render_all(LINKED, ctx(["Carol"], 0), "de").title == "San Francisco was linked by Carol"
    assert one.link == "/wiki/page:San_Francisco"


def test_names_and_payloads_are_text_never_markup() -> None:
    evil = "<img src=x onerror=alert(1)>"
    rendered = render_all(LINKED, RenderContext(
        type="page-linked", actor=evil, object="page:<script>", payload={"from": evil},
        actors=[evil], count=1, others=0))
    assert "<img" not in rendered.html and "<script>" not in rendered.html
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered.html
    assert rendered.html.startswith("<b>")  # the template's own markup stays
    assert rendered.title == f"<script> was linked by {evil}"  # text output is not escaped
    assert rendered.body == f"From {evil}"


def test_templates_cannot_reach_python() -> None:
    sneaky = EventType.from_dict("x", {"templates": {"title": "{{ payload.__class__.__mro__ }}"}})
    title = render_all(sneaky, ctx(["a"], 0)).title
    assert title == "a did page-linked on San Francisco" and "<class" not in title


def test_locales() -> None:
    assert available_locales() == ["de", "en"]
    assert normalise_locale("de-DE") == "de"
    assert normalise_locale("fr") == "en"
    assert normalise_locale("../../etc") == "en"
    assert normalise_locale(None) == "en"


def test_bad_locale_templates_name_the_field() -> None:
    with pytest.raises(InvalidEventType) as info:
        EventType.from_dict("x", {"templates": {"de": {"titel": "x"}}})
    assert info.value.field == "templates.de.titel"
    with pytest.raises(InvalidEventType) as info:
        EventType.from_dict("x", {"templates": {"de": {"title": 3}}})
    assert info.value.field == "templates.de.title"


# -- the default title, for types that declare none (Echo's wording) --------------------------

BUNDLED = EventType("page-linked", bundle="object")


def bundle(actors: list[str], count: int | None = None) -> RenderContext:
    return RenderContext(type="page-linked", actor=actors[0], object="page:San_Francisco",
                         payload={}, actors=actors[:3], count=count or len(actors),
                         others=min(len(actors) - 1, 99))


@pytest.mark.parametrize(("actors", "english", "german"), [
    (["A"], "A did page-linked on San Francisco",
     "A hat page-linked auf San Francisco ausgelöst"),
    (["A", "B"], "A and 1 other did page-linked on San Francisco",
     "A und 1 weitere Person haben page-linked auf San Francisco ausgelöst"),
    ([f"u{n}" for n in range(100)], "u0 and 99+ others did page-linked on San Francisco",
     "u0 und 99+ weitere Personen haben page-linked auf San Francisco ausgelöst"),
])
def test_the_default_title_names_the_others_of_a_bundle(actors: list[str], english: str,
                                                        german: str) -> None:
    assert render_all(BUNDLED, bundle(actors)).title == english
    assert render_all(BUNDLED, bundle(actors), "de").title == german


def test_the_default_title_without_an_object_has_no_dangling_on() -> None:
    mention = EventType("mention")
    alone = RenderContext(type="mention", actor="alice", object=None, payload={},
                          actors=["alice"], count=1, others=0)

    assert render_all(mention, alone).title == "alice did mention"
    assert render_all(mention, alone, "de").title == "alice hat mention ausgelöst"
    nobody = RenderContext(type="mention", actor=None, object=None, payload={}, actors=[],
                           count=1, others=0)
    assert render_all(mention, nobody).title == "someone did mention"


def test_the_default_title_is_escaped_in_html() -> None:
    evil = "<img src=x onerror=alert(1)>"
    rendered = render_all(BUNDLED, bundle([evil, "B"]))

    assert rendered.title == f"{evil} and 1 other did page-linked on San Francisco"
    assert rendered.html == (
        "&lt;img src=x onerror=alert(1)&gt; and 1 other did page-linked on San Francisco")


def test_a_type_declared_over_the_api_without_a_title_gets_the_default() -> None:
    # the API fills in the documented default template; it means "the default title"
    declared = EventType.from_dict("page-linked", {
        "bundle": "object", "templates": {"title": "{{ actor }} did {{ type }} on {{ object }}"}})

    assert render_all(declared, bundle(["A", "B"])).title == (
        "A and 1 other did page-linked on San Francisco")


def test_each_template_of_an_item_sees_the_globals_and_its_own_variables() -> None:
    """A template's context has Jinja's globals and the translations, with the item's
    variables over them; what one template sets stays in its own render, though an item's
    templates share their variables."""
    event_type = EventType.from_dict("page-linked", {"templates": {
        "title": "{% set actor = 'mallory' %}{{ actor }} {{ range(3)|list|length }} "
                 "{{ namespace(n=2).n }} {{ _('someone') }}",
        "body": "{{ actor }} {{ payload.from }}",
        "link": "/wiki/{{ actor }}",
    }})
    rendered = render_all(event_type, ctx(["carol"], 0, **{"from": "Fog"}))
    assert rendered.title == "mallory 3 2 someone"
    assert rendered.body == "carol Fog"
    assert rendered.link == "/wiki/carol"
    assert rendered.html == "mallory 3 2 someone"
    german = render_all(event_type, ctx(["carol"], 0, **{"from": "Fog"}), "de")
    assert german.title == "mallory 3 2 jemand"
