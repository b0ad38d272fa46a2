#!/usr/bin/env python3
"""Write the synchronous client from the asynchronous one, so the client is written once.

``src/tidings/client/_async.py`` and ``_stream_async.py`` (the live stream, a base of the
client) are the sources; ``_sync.py`` and ``_stream_sync.py`` are generated from them by
rewriting tokens (``async def`` → ``def``, ``await x`` → ``x``, ``AsyncClient`` →
``Client``, ``aclose`` → ``close``, …), as httpcore does. Edit the source, then run::

    scripts/unasync.py            # rewrite _sync.py and _stream_sync.py
    scripts/unasync.py --check    # exit 1, showing the difference, when one is stale

``tests/api/test_client_generated.py`` runs the check, so a change to one half only fails CI.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENT = ROOT / "src" / "tidings" / "client"
PAIRS = [(CLIENT / "_async.py", CLIENT / "_sync.py"),
         (CLIENT / "_stream_async.py", CLIENT / "_stream_sync.py")]

HEADER = (
    "# Generated from {source} by scripts/unasync.py: do not edit by hand.\n"
    "# Edit {source}, then run scripts/unasync.py (CI runs it with --check).\n"
)
# where the text has a loop of bare yields, which ruff would have be a `yield from`
YIELD_LOOPS = (
    "# An async generator cannot `yield from`, so loops of `yield` stay loops here:\n"
    "# ruff: noqa: UP028\n"
)
YIELD_LOOP = re.compile(r"^( *)for (\w+) in [^\n]*:\n\1    yield \2\n", re.MULTILINE)

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
    (r"apause", "pause"),
    (r"asleep", "sleep"),
    (r"asynchronous", "synchronous"),
    (r"_stream_async", "_stream_sync"),
]
COMPILED = [(re.compile(rf"(?:^|\b){pattern}(?:$|\b)"), repl) for pattern, repl in RULES]

# what must not survive the rewriting: it would make the synchronous client asynchronous
LEFTOVER = re.compile(r"\b(?:async|await|Async[A-Za-z0-9_]*|aclose|aclosing|__a[a-z]+__)\b")


def unasync(source: str, name: str = "_async.py") -> tuple[str, set[int], list[str]]:
    """The synchronous text of ``source`` (the file ``name``), the rules it used, and why it
    cannot be trusted if it cannot: asynchronous tokens left."""
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
    text = "".join(lines)
    header = HEADER.format(source=name) + (YIELD_LOOPS if YIELD_LOOP.search(text) else "")
    return header + text, used, problems


def unused(used: set[int]) -> list[str]:
    """Rules that matched nothing in any source (it changed under them, or one is misspelled)."""
    return [f"rule {RULES[index][0]!r} matched nothing"
            for index in range(len(RULES)) if index not in used]


def _stale(target: Path, generated: str, source: Path) -> bool:
    current = target.read_text(encoding="utf-8") if target.exists() else ""
    if current == generated:
        return False
    sys.stderr.writelines(difflib.unified_diff(
        current.splitlines(keepends=True), generated.splitlines(keepends=True),
        fromfile=f"{target} (committed)", tofile=f"{target} (from {source.name})"))
    print(f"\n{target} is stale: run scripts/unasync.py", file=sys.stderr)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a generated file is not what its source gives")
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--target", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    # --source/--target: one pair of one's own (the tests' copies); the rules are held to
    # matching something only over the whole client (PAIRS), as each serves one file or another
    one = bool(args.source and args.target)
    pairs = [(args.source, args.target)] if one else PAIRS

    outputs: list[tuple[Path, Path, str]] = []
    used: set[int] = set()
    problems: list[str] = []
    for source, target in pairs:
        generated, rules, found = unasync(source.read_text(encoding="utf-8"), source.name)
        outputs.append((source, target, generated))
        used |= rules
        problems += [f"{source}: {problem}" for problem in found]
    if not one:
        problems += [f"{pairs[0][0]}: {problem}" for problem in unused(used)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 2
    if not args.check:
        for _source, target, generated in outputs:
            target.write_text(generated, encoding="utf-8")
        return 0
    stale = [_stale(target, generated, source) for source, target, generated in outputs]
    return 1 if any(stale) else 0


if __name__ == "__main__":
    sys.exit(main())
