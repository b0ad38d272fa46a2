"""Titles and bodies from an event type's templates (Jinja2, sandboxed).

Text output is never HTML-escaped; HTML output always is (autoescape), so a payload or an actor
name is shown as text, never as markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jinja2 import TemplateError, Undefined
from jinja2.sandbox import SandboxedEnvironment

from tidings.domain.bundling import OTHERS_CAP
from tidings.domain.types import EventType

_text_env = SandboxedEnvironment(autoescape=False, undefined=Undefined)
_html_env = SandboxedEnvironment(autoescape=True, undefined=Undefined)


@dataclass(frozen=True)
class RenderContext:
    type: str
    actor: str | None
    object: str | None
    payload: Mapping[str, Any]
    actors: Sequence[str]
    count: int
    others: int


def object_title(obj: str | None) -> str:
    """'page:San_Francisco' -> 'San Francisco'."""
    if not obj:
        return ""
    return obj.split(":", 1)[-1].replace("_", " ")


def actors_text(actors: Sequence[str], others: int) -> str:
    """'Carol', 'Carol and 1 other', 'Carol and 2 others', 'Carol and 99+ others'."""
    first = actors[0] if actors else "someone"
    if others <= 0:
        return first
    if others == 1:
        return f"{first} and 1 other"
    shown = f"{OTHERS_CAP}+" if others >= OTHERS_CAP else str(others)
    return f"{first} and {shown} others"


@lru_cache(maxsize=512)
def _compile(source: str, html: bool) -> Any:
    return (_html_env if html else _text_env).from_string(source)


def _variables(ctx: RenderContext) -> dict[str, Any]:
    return {
        "type": ctx.type,
        "actor": ctx.actor or "someone",
        "object": ctx.object or "",
        "object_title": object_title(ctx.object),
        "payload": dict(ctx.payload),
        "actors": list(ctx.actors),
        "actors_text": actors_text(ctx.actors, ctx.others),
        "count": ctx.count,
        "others": ctx.others,
    }


def render(source: str, ctx: RenderContext, *, html: bool = False) -> str:
    try:
        return str(_compile(source, html).render(**_variables(ctx))).strip()
    except TemplateError as exc:
        return f"[template error: {exc.message}]"


def render_title(event_type: EventType, ctx: RenderContext) -> str:
    templates = event_type.templates
    source = templates.bundled_title if ctx.count > 1 and templates.bundled_title else \
        templates.title
    return render(source, ctx)
