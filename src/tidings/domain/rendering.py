"""Titles, bodies and links from an event type's templates (Jinja2, sandboxed), in a locale.

Text output is never HTML-escaped; HTML output always is (autoescape), so a payload or an actor
name is shown as text, never as markup. Plural forms come from gettext catalogs
(:mod:`tidings.i18n`); templates may call ``_()``, ``gettext()`` and ``ngettext()`` too.

Rendering never raises: a template that fails at run time, or goes past the sandbox's bounds
(:mod:`tidings.domain.sandbox`), gives the built-in default title (logged with the event's id
and type), and an unsafe link gives no link (:mod:`tidings.domain.links`). Results are cached
by a hash of everything that goes into them, so repeated reads of an unchanged bundle do not
render again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import escape

from tidings.domain.bundling import OTHERS_CAP
from tidings.domain.links import LINK_LIMIT, safe_link
from tidings.domain.plain import plain, run_plain
from tidings.domain.sandbox import compile_template, run
from tidings.domain.types import DEFAULT_TITLE, EventType, Templates
from tidings.i18n import DEFAULT_LOCALE, translations

log = logging.getLogger("tidings.rendering")

TEXT_LIMIT = 2_000     # characters in a title; longer ones are cut with "…"
BODY_LIMIT = 10_000    # characters in a body
HTML_LIMIT = 20_000    # characters in the HTML form; longer ones fall back (no cut markup)
CACHE_SIZE = 4_096          # entries in the render cache
CACHE_ENTRY_LIMIT = 8_000   # characters in one cached result; bigger ones are not kept


@dataclass(frozen=True)
class RenderContext:
    type: str
    actor: str | None
    object: str | None
    payload: Mapping[str, Any]
    actors: Sequence[str]
    count: int
    others: int
    event_id: str | None = None  # only for the log when a template fails


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


def default_title(ctx: RenderContext, locale: str = DEFAULT_LOCALE) -> str:
    """The title of a type without one, and the fallback when a template fails:
    'alice did mention', 'Carol and 1 other did page-linked on San Francisco' (localised)."""
    catalog = translations(locale)
    actors = list(ctx.actors) or ([ctx.actor] if ctx.actor else [])
    others = max(ctx.others, 0)
    values = {"actors": actors_text(actors, others, locale), "type": ctx.type,
              "object": object_title(ctx.object)}
    if ctx.object:
        text = catalog.ngettext("%(actors)s did %(type)s on %(object)s",
                                "%(actors)s did %(type)s on %(object)s", others + 1)
    else:
        text = catalog.ngettext("%(actors)s did %(type)s", "%(actors)s did %(type)s", others + 1)
    return text % values


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
           locale: str = DEFAULT_LOCALE, limit: int = TEXT_LIMIT,
           variables: Mapping[str, Any] | None = None) -> str | None:
    """One template's output (stripped; cut at ``limit`` with "…"), or None when the template
    fails in any way, which is logged with the event's id and type. ``variables``: those of
    ``ctx`` in ``locale``, when the caller renders several templates of one item (the sandbox
    lets no template change them)."""
    if variables is None:
        variables = _variables(ctx, locale)
    try:
        fast = plain(source, html, locale)
        done = run_plain(fast, variables, limit) if fast is not None else None
        text, more = done if done is not None else run(
            compile_template(source, html, locale), variables, limit)
    except Exception as exc:  # a template may fail in any way; one item must not break a page
        log.warning("template of event type %r failed for event %s: %s: %s", ctx.type,
                    ctx.event_id, type(exc).__name__, str(exc)[:200])
        return None
    if more and html:
        log.warning("HTML template of event type %r for event %s is over %d characters",
                    ctx.type, ctx.event_id, limit)
        return None
    return text.strip() + "…" if more else text.strip()


def templates_for(event_type: EventType, locale: str) -> Templates:
    """The type's templates in ``locale``, falling back field by field to the default ones."""
    return event_type.templates.localised(locale)


def _title_source(templates: Templates, ctx: RenderContext) -> str | None:
    """The title template to use, or None for the built-in default title."""
    source = templates.bundled_title if ctx.count > 1 and templates.bundled_title else \
        templates.title
    return None if source == DEFAULT_TITLE else source


def render_title(event_type: EventType, ctx: RenderContext,
                 locale: str = DEFAULT_LOCALE) -> str:
    source = _title_source(templates_for(event_type, locale), ctx)
    title = render(source, ctx, locale=locale) if source is not None else None
    return title if title is not None else default_title(ctx, locale)


def render_all(event_type: EventType, ctx: RenderContext, locale: str = DEFAULT_LOCALE,
               origins: Collection[str] | None = None, *,
               payload_text: str | None = None) -> Rendered:
    """Title, body and link as text, and the HTML form (the ``html`` template or the title).

    ``origins`` limits absolute links to those origins (None: any http(s) URL). Cached.
    ``payload_text``: the JSON text ``ctx.payload`` was parsed from (a stored event's), which
    then stands for the payload in the cache key as it is (no serialising and hashing of the
    payload per item: a page's twenty items paid more for their keys than for their hits).
    """
    key: Hashable | None
    if payload_text is not None:
        key = (event_type.fingerprint, locale,
               tuple(sorted(origins)) if origins is not None else None, ctx.type, ctx.actor,
               ctx.object, payload_text, tuple(ctx.actors), ctx.count, ctx.others)
    else:
        key = _cache_key(event_type, ctx, locale, origins)
    if key is not None:
        with _lock:
            cached = _cache.get(key)
            if cached is not None:
                _cache.move_to_end(key)
                _stats["hits"] += 1
                return cached
    rendered = _render_all(event_type, ctx, locale, origins)
    if key is not None:
        with _lock:
            _stats["misses"] += 1
            if _size(rendered) <= CACHE_ENTRY_LIMIT:
                _cache[key] = rendered
                if len(_cache) > CACHE_SIZE:
                    _cache.popitem(last=False)
    return rendered


def _render_all(event_type: EventType, ctx: RenderContext, locale: str,
                origins: Collection[str] | None) -> Rendered:
    templates = templates_for(event_type, locale)
    title_source = _title_source(templates, ctx)
    variables = _variables(ctx, locale)
    title = render(title_source, ctx, locale=locale, variables=variables) \
        if title_source is not None else None
    if title is None:
        title = default_title(ctx, locale)
        title_source = None
    body = render(templates.body, ctx, locale=locale, limit=BODY_LIMIT, variables=variables) \
        if templates.body else None
    link = None
    if templates.link:
        link = safe_link(render(templates.link, ctx, locale=locale, limit=LINK_LIMIT + 1,
                                variables=variables), origins)
    html_source = templates.html or title_source
    html = render(html_source, ctx, html=True, locale=locale, limit=HTML_LIMIT,
                  variables=variables) if html_source else None
    return Rendered(title=title, body=body, link=link,
                    html=html if html is not None else str(escape(title)))


# -- the render cache -------------------------------------------------------------------------

_cache: OrderedDict[Hashable, Rendered] = OrderedDict()
_stats = {"hits": 0, "misses": 0}
_lock = threading.Lock()


def _cache_key(event_type: EventType, ctx: RenderContext, locale: str,
               origins: Collection[str] | None) -> str | None:
    """A hash of the type's definition and of everything the templates can see; None when the
    payload cannot be serialised (then the result is not cached)."""
    try:
        inputs = json.dumps(
            [event_type.fingerprint, locale, sorted(origins) if origins is not None else None,
             ctx.type, ctx.actor, ctx.object, ctx.payload, list(ctx.actors), ctx.count,
             ctx.others], sort_keys=True, ensure_ascii=False, allow_nan=True)
        return hashlib.sha256(inputs.encode("utf-8", "surrogatepass")).hexdigest()
    except (TypeError, ValueError, RecursionError):
        return None


def _size(rendered: Rendered) -> int:
    return len(rendered.title) + len(rendered.body or "") + len(rendered.link or "") + \
        len(rendered.html)


def render_cache_info() -> dict[str, int]:
    """Hits, misses and size of the render cache (for tests and metrics)."""
    with _lock:
        return {**_stats, "size": len(_cache)}


def clear_render_cache() -> None:
    with _lock:
        _cache.clear()
        _stats.update(hits=0, misses=0)
