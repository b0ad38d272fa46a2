#!/usr/bin/env python3
"""Write the synchronous client from the asynchronous one, so the client is written once.

``src/tidings/client/_async.py`` is the source; ``src/tidings/client/_sync.py`` is generated
from it by rewriting tokens (``async def`` → ``def``, ``await x`` → ``x``, ``AsyncClient`` →
``Client``, ``aclose`` → ``close``, …), as httpcore does. Edit the source, then run::

    scripts/unasync.py            # rewrite _sync.py
    scripts/unasync.py --check    # exit 1, showing the difference, when _sync.py is stale

``tests/test_client_generated.py`` runs the check, so a change to one half only fails CI.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "tidings" / "client" / "_async.py"
TARGET = ROOT / "src" / "tidings" / "client" / "_sync.py"

HEADER = (
    "# Generated from _async.py by scripts/unasync.py: do not edit by hand.\n"
    "# Edit _async.py, then run scripts/unasync.py (CI runs it with --check).\n"
    "# An async generator cannot `yield from`, so loops of `yield` stay loops here:\n"
    "# ruff: noqa: UP028\n"
)

# (pattern, replacement), applied in order to each line, each only at word boundaries
RULES: list[tuple[str, str]] = [
    (r"Async([A-Z][A-Za-z0-9_]*)", r"\1"),  # AsyncClient, httpx.AsyncBaseTransport, AsyncIterator
    (r"async def", "def"),
    (r"async with", "with"),
    (r"async for", "for"),
    (r"await ", ""),
    (r"__aenter__", "__enter__"),
    (r"__aexit__", "__exit__"),
    (r"aclose", "close"),
    (r"aclosing", "closing"),
    (r"aread", "read"),
    (r"aiter_lines_until", "iter_lines_until"),
    (r"asleep", "sleep"),
    (r"asynchronous", "synchronous"),
]
COMPILED = [(re.compile(rf"(?:^|\b){pattern}(?:$|\b)"), repl) for pattern, repl in RULES]

# what must not survive the rewriting: it would make the synchronous client asynchronous
LEFTOVER = re.compile(r"\b(?:async|await|Async[A-Za-z0-9_]*|aclose|aclosing|__a[a-z]+__)\b")


def unasync(source: str) -> tuple[str, list[str]]:
    """The synchronous text of ``source``, and why it cannot be trusted if it cannot:
    asynchronous tokens left, or rules that matched nothing (the source changed under them,
    or the rule is misspelled)."""
    used: set[int] = set()
    lines: list[str] = []
    problems: list[str] = []
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        for index, (pattern, repl) in enumerate(COMPILED):
            line, count = pattern.subn(repl, line)
            if count:
                used.add(index)
        if LEFTOVER.search(line):
            problems.append(f"line {number} is still asynchronous: {line.strip()!r}")
        lines.append(line)
    problems += [f"rule {RULES[index][0]!r} matched nothing"
                 for index in range(len(RULES)) if index not in used]
    return HEADER + "".join(lines), problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the generated file is not what the source gives")
    parser.add_argument("--source", type=Path, default=SOURCE, help=argparse.SUPPRESS)
    parser.add_argument("--target", type=Path, default=TARGET, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    generated, problems = unasync(args.source.read_text(encoding="utf-8"))
    for problem in problems:
        print(f"{args.source}: {problem}", file=sys.stderr)
    if problems:
        return 2

    if not args.check:
        args.target.write_text(generated, encoding="utf-8")
        return 0
    current = args.target.read_text(encoding="utf-8") if args.target.exists() else ""
    if current == generated:
        return 0
    sys.stderr.writelines(difflib.unified_diff(
        current.splitlines(keepends=True), generated.splitlines(keepends=True),
        fromfile=f"{args.target} (committed)", tofile=f"{args.target} (from {args.source.name})"))
    print(f"\n{args.target} is stale: run scripts/unasync.py", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
