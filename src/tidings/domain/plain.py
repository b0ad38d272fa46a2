"""Plain templates, rendered without Jinja's run-time: the same output, a fraction of the cost.

Most titles and links are text with values in them: ``{{ actor }} mentioned you on
{{ object_title }}``, ``/wiki/{{ object_title | replace(' ', '_') }}``. Rendering one through
Jinja builds a context, starts a generator and runs the sandbox's guards for each piece: about
10 µs, three times an item (title, link, HTML), for every item of an inbox page not drawn
before. A template is *plain* when its parsed form (the sandbox's own parse, guards included) is
one run of output whose pieces are each literal text or a value: a variable, items of a
dictionary read by name (``payload.from``, where ``from`` is not an attribute of ``dict``), and
filters with constant arguments taking no context or environment (``replace``,
``upper``, ``trim`` …; not ``truncate``, which takes the environment).
Such a template is rendered here exactly as Jinja would:

* each piece is weighed against the render's output budget before it is output (the sandbox's
  ``_output`` guard), the pieces are output as ``str`` (text) or ``markupsafe.escape`` (HTML;
  literal text as it is), and output stops once past the limit (:func:`sandbox.run`);
* a filter is the sandbox's own function (checked as in a template), called as Jinja's
  compiled code calls it.

Where a value is not there (a variable not given, a key missing, an item that is not a
dictionary) nothing is guessed: the template goes through Jinja (:func:`sandbox.run`), which
then says what it says about undefined values. A template that is not plain always does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes
from markupsafe import escape

from tidings.domain import budget
from tidings.domain.sandbox import OUTPUT_GUARD, SOURCE_LIMIT, environment

_MISSING = object()


@dataclass(frozen=True)
class Value:
    """A piece of output read from the variables: ``name``, then the dictionary items
    ``keys`` in turn, then each filter (its function, constant arguments, and whether it
    takes Jinja's evaluation context first)."""

    name: str
    keys: tuple[str, ...]
    filters: tuple[tuple[Callable[..., Any], tuple[Any, ...], bool], ...]


Piece = str | Value


@dataclass(frozen=True)
class Plain:
    pieces: tuple[Piece, ...]
    eval_ctx: nodes.EvalContext  # what the filters that take one are given
    html: bool


@functools.lru_cache(maxsize=2048)
def plain(source: str, html: bool, locale: str) -> Plain | None:
    """``source`` as a plain template, or None when it is not one (or does not compile:
    Jinja then says why)."""
    if len(source) > SOURCE_LIMIT:
        return None
    env = environment(html, locale)
    try:
        tree = env.parse(source)
    except Exception:  # a template that does not compile: Jinja reports it
        return None
    pieces: list[Piece] = []
    if tree.body:
        if len(tree.body) != 1 or not isinstance(tree.body[0], nodes.Output):
            return None
        for guard in tree.body[0].nodes:
            if not (isinstance(guard, nodes.Filter) and guard.name == OUTPUT_GUARD):
                return None
            node = guard.node
            if node is None:
                return None
            if isinstance(node, nodes.TemplateData):
                pieces.append(node.data)
                continue
            value = _value(env.filters, node)
            if value is None:
                return None
            pieces.append(value)
    return Plain(tuple(pieces), nodes.EvalContext(env), html)


def _value(filters: Mapping[str, Callable[..., Any]], node: nodes.Node) -> Value | None:
    """The value ``node`` reads, if it is one a plain template may hold."""
    applied: list[tuple[Callable[..., Any], tuple[Any, ...], bool]] = []
    while isinstance(node, nodes.Filter):
        func = filters.get(node.name)
        if (func is None or node.node is None or node.kwargs or node.dyn_args is not None
                or node.dyn_kwargs is not None
                or not all(isinstance(arg, nodes.Const) for arg in node.args)):
            return None
        takes = getattr(getattr(func, "jinja_pass_arg", None), "name", None)
        if takes not in (None, "eval_context"):
            return None  # one given the template's context or environment: Jinja runs it
        consts = tuple(arg.value for arg in node.args if isinstance(arg, nodes.Const))
        applied.append((func, consts, takes is not None))
        node = node.node
    keys: list[str] = []
    while isinstance(node, nodes.Getattr):
        if not isinstance(node.attr, str) or hasattr(dict, node.attr):
            return None  # Jinja would read the attribute, not the item
        keys.append(node.attr)
        node = node.node
    if not (isinstance(node, nodes.Name) and node.ctx == "load"):
        return None
    return Value(node.name, tuple(reversed(keys)), tuple(reversed(applied)))


def run_plain(template: Plain, variables: Mapping[str, Any], limit: int
              ) -> tuple[str, bool] | None:
    """:func:`sandbox.run` of the plain ``template``: the first ``limit`` characters of its
    output and whether there was more, or None where a value is not there (then run it
    through Jinja). Raises :class:`budget.RenderLimit` where the sandbox would."""
    spent = 0  # the output budget's count (budget.Budget.emit), without the rest of a Budget
    html = template.html
    out: list[str] = []
    size = 0
    for piece in template.pieces:
        if isinstance(piece, str):
            spent += len(piece)
            text = piece
        else:
            value = variables.get(piece.name, _MISSING)
            for key in piece.keys:
                if type(value) is not dict:
                    return None
                value = value.get(key, _MISSING)
            if value is _MISSING:
                return None
            for func, args, takes_ctx in piece.filters:
                value = func(template.eval_ctx, value, *args) if takes_ctx else func(value, *args)
            spent += budget.weight(value, budget.OUTPUT_BUDGET)
            text = escape(value) if html else str(value)
        if spent > budget.OUTPUT_BUDGET:
            raise budget.RenderLimit(f"more than {budget.OUTPUT_BUDGET} characters of output")
        out.append(text)
        size += len(text)
        if size > limit:
            break
    return "".join(out)[:limit], size > limit
