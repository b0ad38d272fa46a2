"""The Jinja2 sandbox that event-type templates run in, with a bounded cost per render.

Jinja's own sandbox keeps templates away from Python's internals; this one also bounds what a
render may cost (:mod:`tidings.domain.budget`): ``range()`` gives at most ``RANGE_LIMIT``
numbers; every loop iteration and call is a step; every piece of output, also inside macros and
``{% set %}`` blocks, is counted; values built with ``*``, ``+``, ``~``, ``%``, ``**``, filters,
calls and ``set`` are size-checked. The checks are inserted into each parsed template, so they
hold however the template is written. Templates cannot modify lists or dicts they are given.

In HTML templates ``_()``, ``gettext()`` and ``ngettext()`` (and the ``p`` variants) return
escaped text, never trusted markup: a translated string is text like any other.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import Any

from jinja2 import Template, Undefined, nodes, pass_context
from jinja2.runtime import Context, Macro, markup_join, str_join
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer
from markupsafe import escape

from tidings.domain import budget
from tidings.domain.budget import RANGE_LIMIT, RenderLimit
from tidings.i18n import translations

SOURCE_LIMIT = 10_000  # characters in one template

# the guards inserted into every parsed template (filters, so Jinja compiles them as calls)
_STEPS, _OUTPUT, _CONCAT, _SIZE = ("tidings_steps__", "tidings_output__", "tidings_concat__",
                                   "tidings_size__")
OUTPUT_GUARD = _OUTPUT  # the filter wrapped around every piece of output (tidings.domain.plain)


def _safe_range(*args: int) -> range:
    numbers = range(*args)
    if len(numbers) > RANGE_LIMIT:
        raise RenderLimit(f"range() of more than {RANGE_LIMIT} numbers")
    return numbers


# pass_context keeps Jinja from evaluating these at compile time
@pass_context
def _steps(_context: Context, iterable: Iterable[Any]) -> Iterator[Any]:
    spent = budget.spend()
    for item in iterable:
        spent.step()
        yield item


@pass_context
def _output(_context: Context, value: Any) -> Any:
    budget.spend().emit(budget.weight(value, budget.OUTPUT_BUDGET))
    return value


@pass_context
def _concat(context: Context, values: list[Any]) -> str:
    budget.bounded(values)
    return (markup_join if context.eval_ctx.autoescape else str_join)(values)


@pass_context
def _size(_context: Context, value: Any) -> Any:
    return budget.bounded(value)


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` with its arguments checked before and its result after it runs."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if len(args) > skip:
            budget.check_filter(name, args[skip], args[skip + 1:], kwargs)
        return budget.bounded(func(*args, **kwargs))

    return guarded


def _filter(node: nodes.Node, name: str) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


class _Guards(NodeTransformer):
    """Insert the budget's checks into a parsed template."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _filter(node.iter, _STEPS)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)
        node.nodes = [_filter(child, _OUTPUT) for child in node.nodes]
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _filter(nodes.List(node.nodes, lineno=node.lineno), _CONCAT)

    def visit_Assign(self, node: nodes.Assign) -> nodes.Node:
        self.generic_visit(node)
        node.node = _filter(node.node, _SIZE)
        return node


class TemplateSandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox plus the per-render budget."""

    intercepted_binops = budget.BINOPS

    def __init__(self, *, html: bool) -> None:
        super().__init__(autoescape=html, undefined=Undefined, extensions=["jinja2.ext.i18n"])
        self.globals["range"] = _safe_range
        del self.globals["lipsum"]  # placeholder text has no place in a notification
        self.filters = {name: _guard_filter(name, f) for name, f in self.filters.items()}
        self.filters.update({_STEPS: _steps, _OUTPUT: _output, _CONCAT: _concat, _SIZE: _size})

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        guarded: nodes.Template = _Guards().visit(tree)
        return guarded

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        return budget.binop(operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        target, name = value.__self__, value.__name__

        @functools.wraps(wrapped)
        def checked(*args: Any, **kwargs: Any) -> str:
            budget.check_method(target, name, args, kwargs)
            return wrapped(*args, **kwargs)

        return checked

    def call(__self, __context: Context, __obj: Any,  # Jinja's own signature
             *args: Any, **kwargs: Any) -> Any:
        budget.spend().step()
        if not isinstance(__obj, Macro):
            for value in (*args, *kwargs.values()):
                budget.bounded(value)
            target = getattr(__obj, "__self__", None)
            if isinstance(__obj, types.BuiltinMethodType) and isinstance(target, str):
                budget.check_method(target, __obj.__name__, args, kwargs)
        return budget.bounded(super().call(__context, __obj, *args, **kwargs))


def _escaped(func: Callable[..., str]) -> Callable[..., str]:
    """A gettext function whose result is text to escape, never trusted markup."""
    @functools.wraps(func)
    def text(*args: Any) -> str:
        return escape(func(*args))

    return text


@functools.lru_cache(maxsize=32)
def environment(html: bool, locale: str) -> TemplateSandbox:
    """The sandbox for text or HTML output, with ``locale``'s translations installed."""
    env = TemplateSandbox(html=html)
    catalog = translations(locale)
    calls: list[Callable[..., str]] = [catalog.gettext, catalog.ngettext, catalog.pgettext,
                                       catalog.npgettext]
    if html:
        calls = [_escaped(call) for call in calls]
    gettext, ngettext, pgettext, npgettext = calls
    env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext, ngettext, newstyle=True, pgettext=pgettext, npgettext=npgettext)
    return env


@functools.lru_cache(maxsize=2048)
def compile_template(source: str, html: bool, locale: str) -> Template:
    """``source`` compiled in the sandbox; Jinja's TemplateSyntaxError if it does not compile."""
    if len(source) > SOURCE_LIMIT:
        raise RenderLimit(f"a template of more than {SOURCE_LIMIT} characters")
    return environment(html, locale).from_string(source)


@functools.lru_cache(maxsize=2048)
def _globals_of(template: Template) -> dict[str, Any]:
    """``template``'s globals as one plain dict. Jinja keeps them as a ``ChainMap`` of the
    template's and the environment's, which ``Template.generate`` copies key by key into
    every render's context (about a third of a short template's render)."""
    return dict(template.globals)


def run(template: Template, variables: Mapping[str, Any], limit: int) -> tuple[str, bool]:
    """Render ``template`` within a fresh budget: the first ``limit`` characters of its output,
    and whether there was more. Raises what the template raises, or :class:`RenderLimit`.

    The context is the one ``Template.generate`` makes (the globals, then ``variables`` over
    them), built from the globals kept as a plain dict."""
    flat = _globals_of(template)
    env = template.environment
    context = env.context_class(env, {**flat, **variables}, template.name, template.blocks,
                                globals=flat)
    token = budget.current.set(budget.Budget())
    output = template.root_render_func(context)
    try:
        pieces: list[str] = []
        size = 0
        for piece in output:
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                break
        return "".join(pieces)[:limit], size > limit
    finally:
        if isinstance(output, Generator):  # stop the template where the output was cut
            output.close()
        budget.current.reset(token)
