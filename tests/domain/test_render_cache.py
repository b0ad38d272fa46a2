"""A notification is rendered once per type definition, locale and bundle state: repeated reads
of an unchanged bundle take the result from a cache. Pure: no database."""

from __future__ import annotations

from tidings.domain.rendering import RenderContext, render_all, render_cache_info
from tidings.domain.types import EventType, Templates


def _ctx(count: int, actors: list[str]) -> RenderContext:
    return RenderContext(type="cached", actor=actors[0], object="page:Fog",
                         payload={"n": [1, {"a": "b"}]}, actors=actors, count=count,
                         others=len(actors) - 1)


def _misses() -> int:
    return render_cache_info()["misses"]


def test_an_unchanged_bundle_is_rendered_once() -> None:
    event_type = EventType(name="cached", templates=Templates(
        title="{{ actors_text }} linked {{ object_title }} ({{ payload.n }})"))
    before = _misses()

    first = render_all(event_type, _ctx(1, ["alice"]))
    again = render_all(event_type, _ctx(1, ["alice"]))

    assert again is first
    assert _misses() == before + 1


def test_a_new_bundle_state_locale_or_definition_renders_again() -> None:
    event_type = EventType(name="cached",
                           templates=Templates(title="{{ actors_text }} ({{ count }})"))
    one = render_all(event_type, _ctx(1, ["alice"]))
    before = _misses()

    two = render_all(event_type, _ctx(2, ["bob", "alice"]))
    german = render_all(event_type, _ctx(2, ["bob", "alice"]), "de")
    redefined = render_all(
        EventType(name="cached", templates=Templates(title="{{ actors_text }}!")),
        _ctx(1, ["alice"]))

    assert (one.title, two.title, german.title, redefined.title) == (
        "alice (1)", "bob and 1 other (2)", "bob und 1 weitere Person (2)", "alice!")
    assert _misses() == before + 3


def test_a_stored_payload_s_text_keys_the_cache_as_the_payload_does() -> None:
    event_type = EventType(name="cached", templates=Templates(
        title="{{ actors_text }} on {{ payload.n }}"))
    text = '{"n": [1, {"a": "b"}]}'
    before = _misses()

    first = render_all(event_type, _ctx(1, ["alice"]), payload_text=text)
    again = render_all(event_type, _ctx(1, ["alice"]), payload_text=text)
    other = RenderContext(type="cached", actor="alice", object="page:Fog", payload={"n": 2},
                          actors=["alice"], count=1, others=0)
    changed = render_all(event_type, other, payload_text='{"n": 2}')
    bundled = render_all(event_type, _ctx(2, ["bob", "alice"]), payload_text=text)

    assert again is first
    assert changed.title != first.title and "2" in changed.title
    assert bundled.title != first.title
    assert _misses() == before + 3
    assert render_all(event_type, _ctx(1, ["alice"])).title == first.title  # the same text
