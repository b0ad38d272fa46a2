"""What one template render may cost, and the checks that keep it within that.

Titles are rendered on inbox reads, so a template (or an event's payload fed to it) must never
hold a request for long or fill memory. Each render runs with a :class:`Budget`; the sandbox
(:mod:`tidings.domain.sandbox`) calls the checks here before it loops, calls, outputs or builds a
value. Sizes are measured by :func:`weight` (characters and items, nested containers included),
and operations that multiply sizes (``*``, ``replace``, ``join``, ``indent``, format strings)
are estimated *before* they allocate anything. Past any bound :class:`RenderLimit` is raised.
"""

from __future__ import annotations

import operator
import re
import string
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

RANGE_LIMIT = 10_000      # numbers from one range(), and any width or count argument
STEP_LIMIT = 50_000       # loop iterations and calls in one render
TIME_LIMIT = 0.25         # seconds of the rendering thread's CPU time for one render
OUTPUT_BUDGET = 100_000   # characters output in one render, macros and blocks included
VALUE_LIMIT = 100_000     # characters and items in one value a template builds
INT_BITS = 32_768         # bits in one integer a template builds

_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")
_NUMBER = re.compile(r"\d+")


class RenderLimit(Exception):
    """A template went past one of the bounds of its render."""


class Budget:
    """What one render may still spend: steps, time and output.

    Time is the rendering thread's CPU time (``time.thread_time``), not the wall clock: a
    template that spins is stopped, while a render that merely waited for a core on a busy
    machine (other threads, other processes) is not failed for it."""

    def __init__(self) -> None:
        self.steps = 0
        self.output = 0
        self.deadline = time.thread_time() + TIME_LIMIT

    def step(self) -> None:
        self.steps += 1
        if self.steps > STEP_LIMIT:
            raise RenderLimit(f"more than {STEP_LIMIT} loop iterations and calls")
        if time.thread_time() > self.deadline:
            raise RenderLimit(f"rendering took more than {TIME_LIMIT} s of CPU time")

    def emit(self, size: int) -> None:
        self.output += size
        if self.output > OUTPUT_BUDGET:
            raise RenderLimit(f"more than {OUTPUT_BUDGET} characters of output")


current: ContextVar[Budget | None] = ContextVar("tidings_render_budget", default=None)


def spend() -> Budget:
    """The running render's budget."""
    budget = current.get()
    if budget is None:  # a guard evaluated outside a render (never at run time)
        raise RenderLimit("no render budget")
    return budget


def weight(value: Any, limit: int = VALUE_LIMIT) -> int:
    """Characters plus items in ``value``, counted until past ``limit`` (so at most O(limit))."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3
    items: Any
    if isinstance(value, Mapping):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        return 1
    total = len(items)
    for item in items:
        if total > limit:
            break
        total += weight(item, limit - total)
    return total


def bounded(value: Any) -> Any:
    """``value`` if it is small enough to keep, else :class:`RenderLimit`."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > INT_BITS:
        raise RenderLimit(f"an integer of more than {INT_BITS} bits")
    _fits(weight(value))
    return value


def _fits(size: int) -> None:
    if size > VALUE_LIMIT:
        raise RenderLimit(f"a value of more than {VALUE_LIMIT} characters or items")


def small_number(value: Any) -> None:
    """Refuse a width or count that would allocate or loop too much."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > RANGE_LIMIT:
        raise RenderLimit(f"a width or count over {RANGE_LIMIT}")


def check_format(spec: str, args_weight: int) -> None:
    """Refuse a %- or {}-format string whose widths or repeated fields would be too big."""
    fields = 0
    for match in _PERCENT_SPEC.finditer(spec):
        fields += 1
        for number in match.groups():
            if number == "*" or (number and int(number) > RANGE_LIMIT):
                raise RenderLimit(f"a format width over {RANGE_LIMIT}")
    if "{" in spec:
        try:
            parsed = list(string.Formatter().parse(spec))
        except ValueError:
            parsed = []  # formatting raises the same error itself
        for _literal, name, format_spec, _conversion in parsed:
            fields += name is not None
            if format_spec and ("{" in format_spec or any(
                    int(n) > RANGE_LIMIT for n in _NUMBER.findall(format_spec))):
                raise RenderLimit(f"a format width over {RANGE_LIMIT}")
    _fits(len(spec) + fields * args_weight)


def check_replace(text: Any, old: Any, new: Any) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        found = text.count(old) if old else len(text) + 1
        _fits(len(text) + found * max(len(new) - len(old), 0))


def check_join(separator: Any, items: Any) -> None:
    if isinstance(items, list | tuple | set | frozenset):
        _fits(weight(items) + weight(separator) * len(items))


def check_indent(text: Any, width: Any) -> None:
    small_number(width)
    if isinstance(text, str):
        step = width if isinstance(width, int) else weight(width)
        _fits(len(text) + (text.count("\n") + 1) * abs(step))


_BINOPS: Mapping[str, Callable[[Any, Any], Any]] = {
    "*": operator.mul, "**": operator.pow, "+": operator.add, "%": operator.mod,
}
BINOPS = frozenset(_BINOPS)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def binop(op: str, left: Any, right: Any) -> Any:
    """``left op right`` for the intercepted operators, checked before it is computed."""
    if op == "*":
        if _is_int(left) and _is_int(right):
            if left.bit_length() + right.bit_length() > INT_BITS:
                raise RenderLimit(f"an integer of more than {INT_BITS} bits")
        elif _is_int(left) or _is_int(right):
            times, sequence = (left, right) if _is_int(left) else (right, left)
            _fits(weight(sequence) * max(times, 0))
    elif op == "**":
        if _is_int(left) and _is_int(right) and abs(left) > 1 and \
                left.bit_length() * right > INT_BITS:
            raise RenderLimit(f"an integer of more than {INT_BITS} bits")
    elif op == "+":
        _fits(weight(left) + weight(right))
    elif op == "%" and isinstance(left, str):
        check_format(left, weight(right))
    return bounded(_BINOPS[op](left, right))


def _arg(args: Sequence[Any], kwargs: Mapping[str, Any], index: int, name: str,
         default: Any = None) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def check_filter(name: str, value: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Before a filter runs: its input is small, and what it makes from it will be."""
    for item in (value, *args, *kwargs.values()):
        bounded(item)
    if name in ("center", "wordwrap", "batch", "slice", "truncate"):
        for item in (*args, *kwargs.values()):
            small_number(item)
    elif name == "replace":
        check_replace(value, _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new"))
    elif name == "join":
        check_join(_arg(args, kwargs, 0, "d", ""), value)
    elif name == "indent":
        check_indent(value, _arg(args, kwargs, 0, "width", 4))
    elif name == "format" and isinstance(value, str):
        check_format(value, weight(list(args)) + weight(dict(kwargs)))
    elif name == "sum" and not isinstance(_arg(args, kwargs, 1, "start", 0), int | float):
        raise RenderLimit("sum() only adds numbers here")


def check_method(target: str, name: str, args: Sequence[Any],
                 kwargs: Mapping[str, Any]) -> None:
    """Before a method of a string runs (``.replace``, ``.join``, ``.center`` …)."""
    if name in ("center", "ljust", "rjust", "zfill", "expandtabs"):
        for item in (*args, *kwargs.values()):
            small_number(item)
        if name == "expandtabs":
            tab = _arg(args, kwargs, 0, "tabsize", 8)
            _fits(len(target) + target.count("\t") * (tab if _is_int(tab) else 0))
    elif name == "replace":
        check_replace(target, _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new"))
    elif name == "join" and args:
        check_join(target, args[0])
    elif name in ("format", "format_map"):
        check_format(target, weight(list(args)) + weight(dict(kwargs)))
