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
    assert title.startswith("[template error:") and "<class" not in title


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
