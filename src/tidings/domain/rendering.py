"""Titles, bodies and links from an event type's templates (Jinja2, sandboxed), in a locale.

Text output is never HTML-escaped; HTML output always is (autoescape), so a payload or an actor
name is shown as text, never as markup. Plural forms come from gettext catalogs
(:mod:`tidings.i18n`); templates may call ``_()``, ``gettext()`` and ``ngettext()`` too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jinja2 import TemplateError, Undefined
from jinja2.sandbox import SandboxedEnvironment

from tidings.domain.bundling import OTHERS_CAP
from tidings.domain.types import EventType, Templates
from tidings.i18n import DEFAULT_LOCALE, translations


@dataclass(frozen=True)
class RenderContext:
    type: str
    actor: str | None
    object: str | None
    payload: Mapping[str, Any]
    actors: Sequence[str]
    count: int
    others: int


@dataclass(frozen=True)
class Rendered:
    title: str
    body: str | None
    link: str | None
    html: str


def object_title(obj: str | None) -> str:
    """'page:San_Francisco' -> 'San Francisco'."""
    if not obj:
        return ""
    return obj.split(":", 1)[-1].replace("_", " ")


def actors_text(actors: Sequence[str], others: int, locale: str = DEFAULT_LOCALE) -> str:
    """'Carol', 'Carol and 1 other', 'Carol and 2 others', 'Carol and 99+ others' (localised)."""
    catalog = translations(locale)
    first = actors[0] if actors else catalog.gettext("someone")
    if others <= 0:
        return first
    if others >= OTHERS_CAP:
        return catalog.gettext("%(first)s and 99+ others") % {"first": first}
    template = catalog.ngettext("%(first)s and %(num)s other", "%(first)s and %(num)s others",
                                others)
    return template % {"first": first, "num": others}


@lru_cache(maxsize=32)
def _environment(html: bool, locale: str) -> SandboxedEnvironment:
    env = SandboxedEnvironment(autoescape=html, undefined=Undefined,
                               extensions=["jinja2.ext.i18n"])
    env.install_gettext_translations(translations(locale), newstyle=True)  # type: ignore[attr-defined]
    return env


@lru_cache(maxsize=1024)
def _compile(source: str, html: bool, locale: str) -> Any:
    return _environment(html, locale).from_string(source)


def _variables(ctx: RenderContext, locale: str) -> dict[str, Any]:
    return {
        "type": ctx.type,
        "actor": ctx.actor or translations(locale).gettext("someone"),
        "object": ctx.object or "",
        "object_title": object_title(ctx.object),
        "payload": dict(ctx.payload),
        "actors": list(ctx.actors),
        "actors_text": actors_text(ctx.actors, ctx.others, locale),
        "count": ctx.count,
        "others": ctx.others,
    }


def render(source: str, ctx: RenderContext, *, html: bool = False,
           locale: str = DEFAULT_LOCALE) -> str:
    try:
        return str(_compile(source, html, locale).render(**_variables(ctx, locale))).strip()
    except TemplateError as exc:
        return f"[template error: {exc.message}]"


def templates_for(event_type: EventType, locale: str) -> Templates:
    """The type's templates in ``locale``, falling back field by field to the default ones."""
    return event_type.templates.localised(locale)


def render_title(event_type: EventType, ctx: RenderContext,
                 locale: str = DEFAULT_LOCALE) -> str:
    templates = templates_for(event_type, locale)
    source = templates.bundled_title if ctx.count > 1 and templates.bundled_title else \
        templates.title
    return render(source, ctx, locale=locale)


def render_all(event_type: EventType, ctx: RenderContext,
               locale: str = DEFAULT_LOCALE) -> Rendered:
    """Title, body and link as text, and the HTML form (the ``html`` template or the title)."""
    templates = templates_for(event_type, locale)
    title_source = templates.bundled_title if ctx.count > 1 and templates.bundled_title else \
        templates.title
    title = render(title_source, ctx, locale=locale)
    body = render(templates.body, ctx, locale=locale) if templates.body else None
    link = render(templates.link, ctx, locale=locale) if templates.link else None
    html = render(templates.html or title_source, ctx, html=True, locale=locale)
    return Rendered(title=title, body=body, link=link, html=html)
