"""A template can fail or be costly in any way; rendering still answers at once with a safe
title, escaped HTML and a link a browser may follow. Pure: no database."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from tidings.domain import budget
from tidings.domain.rendering import RenderContext, render_all
from tidings.domain.types import EventType, Templates

FALLBACK = "alice did mention on Fog"
EVIL = "<img src=x onerror=alert(1)>"


def mention(**templates: str) -> EventType:
    return EventType(name="mention", templates=Templates(**templates))


def ctx(payload: dict[str, Any] | None = None, **fields: Any) -> RenderContext:
    values: dict[str, Any] = {"type": "mention", "actor": "alice", "object": "page:Fog",
                              "payload": payload or {}, "actors": ["alice"], "count": 1,
                              "others": 0, **fields}
    return RenderContext(**values)


# -- run-time errors: every kind, not only Jinja's own ---------------------------------------

RUNTIME_ERRORS = [
    ("{{ payload.n + 1 }}", {"n": "three"}),
    ("{{ payload.n // 0 }}", {"n": 3}),
    ("{{ 1 / payload.z }}", {"z": 0}),
    ("{{ '%d' % payload.s }}", {"s": "x"}),
    ("{{ payload.s|int + payload.s }}", {"s": "x"}),
    ("{{ payload.items()|list|first|upper(3) }}", {"a": 1}),
    ("{{ (2 ** 100000)|string }}", {}),
    ("{{ payload.__class__.__mro__ }}", {}),
    ("{{ payload.xs.append(1) }}", {"xs": []}),  # templates do not change what they are given
    ("{{ payload|dictsort(by='nope') }}", {}),
]


@pytest.mark.parametrize(("title", "payload"), RUNTIME_ERRORS,
                         ids=[t for t, _ in RUNTIME_ERRORS])
def test_a_failing_title_falls_back_to_the_default(title: str, payload: dict[str, Any]) -> None:
    rendered = render_all(mention(title=title), ctx(payload))

    assert rendered.title == FALLBACK
    assert rendered.html == FALLBACK


def test_the_fallback_is_escaped_and_the_other_fields_stay() -> None:
    event_type = mention(title="{{ payload.n + 1 }}", body="from {{ payload.who }}",
                         link="/wiki/{{ object_title }}")
    rendered = render_all(event_type, ctx({"n": "x", "who": "carol"}, actor=EVIL,
                                          actors=[EVIL]))

    assert rendered.title == f"{EVIL} did mention on Fog"
    assert rendered.html == "&lt;img src=x onerror=alert(1)&gt; did mention on Fog"
    assert (rendered.body, rendered.link) == ("from carol", "/wiki/Fog")


def test_a_failing_body_or_link_is_left_out() -> None:
    rendered = render_all(mention(title="hi", body="{{ 1 // payload.z }}",
                                  link="/{{ payload.z.x.y + 1 }}"), ctx({"z": 0}))

    assert (rendered.title, rendered.body, rendered.link) == ("hi", None, None)


def test_a_failure_is_logged_with_the_event_id_and_type(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="tidings.rendering"):
        render_all(mention(title="{{ payload.n + 1 }}"), ctx({"n": "logged"}, event_id="4711"))

    (record,) = [r for r in caplog.records if r.name == "tidings.rendering"]
    assert "4711" in record.getMessage() and "'mention'" in record.getMessage()
    assert "TypeError" in record.getMessage()


# -- bounded cost ----------------------------------------------------------------------------

COSTLY = [
    # loops: nested ranges, and ranges over the limit
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x",
    "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}x",
    "{{ range(10001)|length }}",
    # recursion: 2**30 macro calls
    "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(30) }}",
    # values that grow: doubling, repetition, widths, replace, indent, join
    "{% set ns = namespace(s='ab') %}{% for i in range(26) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s|length }}",
    "{{ ('ab' * 200000)|length }}",
    "{{ (['ab'] * 200000)|length }}",
    "{{ ('%200000d' % 1)|length }}",
    "{{ '{:200000}'.format(1)|length }}",
    "{{ 'x'|center(200000)|length }}",
    "{{ ('ab' * 500)|replace('', 'cd' * 500)|length }}",
    "{{ ('ab' * 500).replace('', 'cd' * 500)|length }}",
    "{{ ('a\n' * 500)|indent(1000)|length }}",
    "{{ (2 ** 1000000) > 0 }}",
    "{% set ns = namespace(n=3 ** 10000) %}{% for i in range(8) %}{% set ns.n = ns.n * ns.n %}"
    "{% endfor %}{{ ns.n > 0 }}",
    # output that is not shown at once but collected (a set block)
    "{% set x %}{% for i in range(10000) %}{{ 'y' * 100 }}{% endfor %}{% endset %}{{ x|length }}",
]


@pytest.mark.parametrize("title", COSTLY, ids=range(len(COSTLY)))
def test_a_costly_template_renders_fast_and_falls_back(title: str) -> None:
    started = time.monotonic()
    rendered = render_all(mention(title=title), ctx())

    assert time.monotonic() - started < 1.0
    assert rendered.title == FALLBACK


@pytest.mark.parametrize(("title", "expected"), [
    ("{{ range(10000)|length }}", "10000"),
    ("{% for i in range(3) %}{% for j in range(3000) %}{% endfor %}{% endfor %}ok", "ok"),
    ("{{ ('ab' * 1000)|length }}", "2000"),
    ("{{ payload.n|default(50000) }}", "50000"),
    ("{{ '%5d' % 42 }}|{{ '{:>4}'.format(7) }}", "42|   7"),
    ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}.{% endif %}{% endmacro %}{{ f(20) }}", "." * 20),
])
def test_ordinary_templates_stay_within_the_bounds(title: str, expected: str) -> None:
    assert render_all(mention(title=title), ctx()).title == expected


def test_the_time_bound_counts_cpu_time_not_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A render is cut for what it spends, not for the time it waited for a core."""
    monkeypatch.setattr(budget, "TIME_LIMIT", 0.05)
    waited = budget.Budget()
    time.sleep(0.1)  # descheduled: no CPU spent
    waited.step()
    spinning = budget.Budget()
    with pytest.raises(budget.RenderLimit, match="CPU time"):
        while True:
            spinning.step()
            sum(range(2_000))


def test_long_output_is_cut() -> None:
    rendered = render_all(mention(title="{{ 'x' * 1500 }} {{ 'y' * 1500 }}",
                                  body="{% for i in range(2000) %}{{ 'z' * 9 }} {% endfor %}"),
                          ctx())

    assert rendered.title.endswith("…") and len(rendered.title) < 2100
    assert rendered.body is not None and rendered.body.endswith("…")
    assert len(rendered.body) < 10100


def test_long_html_falls_back_rather_than_cut_markup() -> None:
    rendered = render_all(mention(title="t", html="<b>{{ 'x' * 30000 }}</b>"), ctx())

    assert rendered.html == "t"


# -- escaping and links ----------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    "_(payload.t)", "gettext(payload.t)", "ngettext(payload.t, payload.t, 2)",
    "pgettext('ctx', payload.t)", "_('%(x)s', x=payload.t)",
])
def test_translated_text_is_escaped_in_html(call: str) -> None:
    rendered = render_all(mention(title=f"{{{{ {call} }}}}", html=f"<p>{{{{ {call} }}}}</p>"),
                          ctx({"t": EVIL}))

    assert rendered.html == "<p>&lt;img src=x onerror=alert(1)&gt;</p>"
    assert rendered.title == EVIL  # text output is text, not escaped


@pytest.mark.parametrize("link", [
    "javascript:alert(1)", " javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:x",
    "data:text/html,<script>alert(1)</script>", "vbscript:x", "//evil.example",
    "/\\evil.example", "\\\\evil.example", "/\t/evil.example", "https://a@evil.example/",
    "https:evil.example", "wiki/Fog", "ftp://example.org/",
])
def test_an_unsafe_link_renders_as_no_link(link: str) -> None:
    rendered = render_all(mention(title="t", link="{{ payload.link }}"), ctx({"link": link}))

    assert rendered.link is None


@pytest.mark.parametrize("link", ["/wiki/Fog", "https://example.org/wiki/Fog?a=1#b",
                                  "http://example.org"])
def test_a_safe_link_is_kept(link: str) -> None:
    rendered = render_all(mention(title="t", link="{{ payload.link }}"), ctx({"link": link}))

    assert rendered.link == link


def test_absolute_links_may_be_limited_to_origins() -> None:
    event_type = mention(title="t", link="{{ payload.link }}")
    origins = ["https://example.org"]

    assert render_all(event_type, ctx({"link": "https://evil.example/"}), "en", origins).link \
        is None
    assert render_all(event_type, ctx({"link": "https://example.org/x"}), "en", origins).link \
        == "https://example.org/x"
    assert render_all(event_type, ctx({"link": "/x"}), "en", origins).link == "/x"
