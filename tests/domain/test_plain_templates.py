"""Plain templates (:mod:`tidings.domain.plain`) render exactly as Jinja's sandbox renders them:
the same text or HTML, the same cut at the limit, the same refusal past the output budget; and
what is not plain, or reads a value that is not there, goes through Jinja."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from tidings.domain import budget
from tidings.domain.plain import plain, run_plain
from tidings.domain.rendering import RenderContext, render
from tidings.domain.sandbox import compile_template, run

NAMES = ("actor", "object_title", "actors_text", "count", "payload")
KEYS = ("from", "summary", "n", "deep", "missing")
FILTERS = ("", " | replace(' ', '_')", " | upper", " | replace('a', '<&>')", " | trim",
           " | default('d')", " | e", " | string", " | length")

leaf = st.one_of(st.text(max_size=30), st.integers(-10**6, 10**6), st.none(), st.booleans(),
                 st.floats(allow_nan=False, allow_infinity=False),
                 st.sampled_from(["<b>x</b>", "a & b", "'q' \"d\"", "x y z", " pad "]))
values = st.recursive(leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
    max_leaves=6)
variables = st.fixed_dictionaries({
    name: values for name in NAMES[:-1]}, optional={
    "payload": st.dictionaries(st.sampled_from(KEYS), values, max_size=4)})


@st.composite
def templates(draw: st.DrawFn) -> str:
    pieces = []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            pieces.append(draw(st.sampled_from(
                ["", " was linked by ", "<i>", " & ", "/wiki/", "\n", "  ", "é ✓"])))
        else:
            name = draw(st.sampled_from(NAMES))
            path = "".join(f".{key}" for key in draw(st.lists(st.sampled_from(KEYS),
                                                                max_size=2)))
            pieces.append("{{ " + name + path + draw(st.sampled_from(FILTERS)) + " }}")
    return "".join(pieces)


def jinja(source: str, html: bool, given: dict[str, Any], limit: int) -> Any:
    try:
        return run(compile_template(source, html, "en"), given, limit)
    except Exception as exc:
        return type(exc)


def fast(source: str, html: bool, given: dict[str, Any], limit: int) -> Any:
    template = plain(source, html, "en")
    assert template is not None, source
    try:
        return run_plain(template, given, limit)
    except Exception as exc:
        return type(exc)


@settings(max_examples=400, deadline=None)
@given(source=templates(), given=variables, html=st.booleans(),
       limit=st.sampled_from([0, 1, 5, 20, 2000]))
def test_a_plain_template_renders_as_jinja_renders_it(source: str, given: dict[str, Any],
                                                       html: bool, limit: int) -> None:
    ours = fast(source, html, given, limit)
    if ours is None:  # a value not there: Jinja answers
        return
    assert ours == jinja(source, html, given, limit)


def test_the_output_budget_holds_on_the_plain_path() -> None:
    big = {"actor": "x" * (budget.OUTPUT_BUDGET // 2 + 1)}
    source = "{{ actor }}{{ actor }}"
    assert plain(source, False, "en") is not None
    with pytest.raises(budget.RenderLimit):
        run_plain(plain(source, False, "en"), big, 10**9)  # type: ignore[arg-type]
    assert jinja(source, False, big, 10**9) is budget.RenderLimit


@pytest.mark.parametrize("source", [
    "{% if actor %}{{ actor }}{% endif %}", "{{ actor ~ 'x' }}", "{{ _('someone') }}",
    "{{ payload.items }}", "{{ payload['from'] }}", "{{ actor | nosuchfilter }}",
    "{{ range(3) | list }}", "{{ actor | replace(actor, 'x') }}", "{% set a = 1 %}{{ a }}",
    "{{ actor | truncate(12) }}", "{{ 'a' | upper }}",
])
def test_what_is_not_plain_goes_through_jinja(source: str) -> None:
    assert plain(source, False, "en") is None


def test_a_value_not_there_goes_through_jinja_and_reads_as_jinja_reads_it() -> None:
    template = plain("{{ payload.missing }}!", False, "en")
    assert template is not None
    assert run_plain(template, {"payload": {}}, 100) is None
    assert run_plain(template, {"payload": {"missing": [1]}}, 100) == ("[1]!", False)
    ctx = RenderContext(type="t", actor="ann", object=None, payload={}, actors=["ann"],
                        count=1, others=0)
    assert render("{{ payload.missing }}!", ctx) == "!"
    assert render("{{ payload.missing.deeper }}!", ctx) is None  # Jinja's UndefinedError
