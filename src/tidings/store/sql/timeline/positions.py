"""A timeline position, (created_at, event id), compared in SQL: the one order of every
timeline (``tidings.domain.timeline.Position``), on two columns.

PostgreSQL compares row values (``(a, i) < (:x, :y)``), which its B-tree scans take as one
index condition. SQLite and MariaDB get the same comparison spelled out
(``a <= :x AND (a < :x OR i < :y)``): a range on the time column they can take from an index,
where MariaDB would not use a row value's."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, ColumnElement, and_, bindparam, or_, tuple_

OPS = ("<", "<=", ">", ">=")


def compare(op: str, columns: tuple[str, str], values: tuple[str, str], *, rows: bool) -> str:
    """SQL text of ``(columns) op (values)`` (``rows``: as a row value comparison)."""
    (at, id_), (x, y) = columns, values
    if rows:
        return f"({at}, {id_}) {op} ({x}, {y})"
    return f"{at} {op[0]}= {x} AND ({at} {op[0]} {x} OR {id_} {op} {y})"


def compared(op: str, at: Any, id_: Any, name: str, *, rows: bool) -> ColumnElement[bool]:
    """``(at, id_) op (:name_at, :name_id)`` as an expression (see :func:`compare`)."""
    x = bindparam(f"{name}_at", type_=BigInteger)
    y = bindparam(f"{name}_id", type_=BigInteger)
    if rows:
        left, right = tuple_(at, id_), tuple_(x, y)
        result: ColumnElement[bool] = {"<": left < right, "<=": left <= right,
                                       ">": left > right, ">=": left >= right}[op]
        return result
    if op[0] == "<":
        return and_(at <= x, or_(at < x, id_ < y if op == "<" else id_ <= y))
    return and_(at >= x, or_(at > x, id_ > y if op == ">" else id_ >= y))


def params(name: str, position: tuple[int, int] | None) -> dict[str, int]:
    """The parameters ``:name_at`` and ``:name_id`` of a position (none for None)."""
    if position is None:
        return {}
    return {f"{name}_at": position[0], f"{name}_id": position[1]}
