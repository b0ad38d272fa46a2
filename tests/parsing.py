"""Parsing the project's own Python files in tests."""

from __future__ import annotations

import ast
import gc
from pathlib import Path


def parse(path: Path) -> ast.Module:
    """``ast.parse`` of ``path`` with the garbage collector held off meanwhile.

    CPython 3.11 counts the AST's construction depth in state its threads share
    (python/cpython#106905): a collection that runs a finalizer in the middle can hand the
    interpreter to another thread building an AST of its own, and the parse then fails with
    "AST constructor recursion depth mismatch". Without a collection, nothing runs in between.
    """
    source = path.read_text(encoding="utf-8")
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()
