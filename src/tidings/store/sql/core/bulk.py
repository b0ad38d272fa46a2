"""PostgreSQL bulk writes (every column of any number of rows sent as one JSON array) and bulk
lookups (one index probe per value of a JSON array); MariaDB bulk writes (the rows sent as one
JSON array of arrays, read by ``JSON_TABLE``: :func:`json_batches`).

A column goes as the text of a JSON array (:func:`column_arrays`), which ``json.dumps`` writes
at C speed, where the driver adapts a list parameter element by element in Python (for text,
a pattern search per element to decide its quoting): in a profile of a 20,000-row fan-out that
adaptation took a quarter of the worker's time. The server splits each array with
``json_array_elements_text`` and casts the elements to the column's type.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Select,
    String,
    Table,
    TextClause,
    bindparam,
    cast,
    func,
    literal,
    select,
    text,
    true,
)
from sqlalchemy.dialects import mysql as mysql_dialect
from sqlalchemy.dialects import postgresql as pg_dialect

_PG = pg_dialect.dialect()  # type: ignore[no-untyped-call]
_LENGTH = re.compile(r"(?<=^VARCHAR)\(\d+\)$")
SCALARS = (str, int, float, type(None))  # what a column sends as one value (bool is an int)


@functools.lru_cache(maxsize=256)
def unnest_insert(table: Table, columns: tuple[str, ...], ignore: bool,
                  keys: tuple[str, ...] = (), add: str = "",
                  returning: tuple[str, ...] = (), single: tuple[bool, ...] = (),
                  ordered: bool = False, where: str = "") -> TextClause:
    """PostgreSQL: one INSERT of any number of rows, each column sent as one JSON array
    (:func:`column_arrays`; ``INSERT … SELECT … FROM ROWS FROM (json_array_elements_text(…),
    …)``), or as one value where ``single`` marks a column every row has the same value in.
    Its text is the same whatever the row count, so it is parsed once (and prepared by
    psycopg once it recurs), where a multi-row VALUES list is a new, long statement to build,
    send and plan for every batch. ``ordered``: the rows go in in the arrays' order, so a
    serial key takes its values in that order (a RETURNING of it, sorted, is in the rows'
    order: SQLAlchemy's ``sort_by_parameter_order`` relies on the same ``ORDER BY``).
    ``where``: a condition the rows go in under (SQL text), all of them or none."""
    quote = _PG.identifier_preparer.quote
    single = single or (False,) * len(columns)
    # a VARCHAR's length is left to the INSERT, which refuses a longer value (a CAST to
    # VARCHAR(n) would cut it short without a word)
    kinds = [_LENGTH.sub("", table.c[c].type.compile(dialect=_PG)) for c in columns]
    values = ", ".join(f"CAST(:c{i} AS {kind})" if one else f"CAST(x{i} AS {kind})"
                       for i, (kind, one) in enumerate(zip(kinds, single, strict=True)))
    spread = [i for i, one in enumerate(single) if not one]
    arrays = ", ".join(f"json_array_elements_text(CAST(:c{i} AS JSON))" for i in spread)
    names = ", ".join(f"x{i}" for i in spread)
    sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
           f"SELECT {values} FROM ROWS FROM ({arrays})"
           + (f" WITH ORDINALITY AS r({names}, n)" if ordered else f" AS r({names})")
           + (f" WHERE {where}" if where else "") + (" ORDER BY n" if ordered else ""))
    if ignore:
        sql += " ON CONFLICT DO NOTHING"
    elif add:  # an existing key adds the row's value to the stored one (NULL counting 0)
        name, target = quote(add), quote(table.name)
        sql += (f" ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO UPDATE SET {name} = "
                f"COALESCE({target}.{name}, 0) + excluded.{name}")
    if returning:
        sql += " RETURNING " + ", ".join(quote(c) for c in returning)
    return text(sql)


def column_arrays(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
                  ) -> tuple[tuple[bool, ...], dict[str, Any]]:
    """The parameters of :func:`unnest_insert` and its ``single`` shape: each column's values
    as a JSON array, or the one value of a column that is the same in every row (a fan-out's
    rows differ in their user only: the server then splits one array, not one per column;
    the first column stays an array, so the rows are counted even when all are alike)."""
    return column_params([[row[c] for row in rows] for c in columns])


def column_params(columns: Sequence[Sequence[Any]]) -> tuple[tuple[bool, ...], dict[str, Any]]:
    """:func:`column_arrays` of rows given column by column (each column's values, in the
    rows' order), for a caller that holds its rows so: no row dictionaries to build."""
    single: list[bool] = []
    params: dict[str, Any] = {}
    for i, values in enumerate(columns):
        first = values[0]
        one = (i > 0 and isinstance(first, SCALARS) and values.count(first) == len(values))
        single.append(one)
        params[f"c{i}"] = first if one else json.dumps(values)
    return tuple(single), params


def _json_values() -> Any:
    """``:values``, the text of a JSON array, as a table ``k`` of one text column ``value``."""
    return func.json_array_elements_text(
        cast(bindparam("values", type_=String), pg_dialect.JSON)).table_valued(
        "value").render_derived(name="k")


@functools.lru_cache(maxsize=32)
def probes(table: Table, fixed: tuple[str, ...], column: str,
           returned: tuple[str, ...] = ()) -> Select[Any]:
    """PostgreSQL: the rows of ``table`` whose ``fixed`` columns equal the parameters of the
    same names and whose ``column`` is one of ``:values`` (the text of a JSON array): one
    index probe per value, whatever the statistics say. Written as ``column = ANY(…)``, a
    custom plan can take the fixed columns alone as the index condition and filter the values
    out of every row under them: a key the statistics have not seen yet (a new API key's
    idempotency scope, a new group, a fresh event) looks like a handful of rows, and the
    lookup then reads all of them (8 ms at 26,000 events of one API key). A join of the values
    to the table can be flattened into the same plan; the ``LIMIT 1`` of each value's lookup
    (the columns make a key) keeps it a lookup of its own. One statement for any number of
    values, prepared once. ``returned``: the columns it gives (all when empty)."""
    values = _json_values()
    chosen = [table.c[c] for c in returned] if returned else list(table.c)
    one = select(*chosen).where(*(table.c[f] == bindparam(f) for f in fixed),
                                table.c[column] == values.c.value).limit(1).lateral("p")
    return select(one).select_from(values).join(one, true())


def any_within(table: Table, fixed: tuple[str, ...], column: str) -> Select[Any]:
    """PostgreSQL: one row if ``table`` has a row whose ``fixed`` columns equal the parameters
    of the same names and whose ``column`` lies between the least and the greatest of
    ``:values`` (the text of a JSON array), compared in the column's own collation: one
    descent of an index on (fixed..., column), whatever the number of values. Whether any of
    many keys is there at all, before :func:`probes` looks them up one by one.

    The bounds are computed once, before the scan (a materialised CTE read by two init
    plans), so they are the index condition's parameters whatever the plan: joined to the
    table instead, they made a plan that, for each row of the fixed columns (every row an
    event's earlier chunks wrote), computed them again from the whole array."""
    values = _json_values()
    span = select(func.min(values.c.value).label("lo"),
                  func.max(values.c.value).label("hi")).cte("span").prefix_with("MATERIALIZED")
    key = table.c[column]
    return (select(literal(1)).select_from(table)
            .where(*(table.c[f] == bindparam(f) for f in fixed),
                   key >= select(span.c.lo).scalar_subquery(),
                   key <= select(span.c.hi).scalar_subquery()).limit(1))


JSON_ROWS = 5000  # rows per MariaDB JSON_TABLE insert
_STAGED = "LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"


@functools.lru_cache(maxsize=128)
def json_table_insert(table: Table, columns: tuple[str, ...], ignore: bool,
                      add: str = "") -> TextClause:
    """MariaDB/MySQL: one INSERT of the rows of ``:rows``, the text of a JSON array of rows
    (each an array of ``columns``' values), read by ``JSON_TABLE``. Every value is read as
    text and converted to its column's type by the INSERT itself, as a literal of a
    multi-row VALUES list is (a value too long or out of range is refused alike, in strict
    mode). ``add``: an existing key adds the row's value of that column to the stored one
    (NULL counting as 0)."""
    quote = mysql_dialect.dialect().identifier_preparer.quote
    target = quote(table.name)
    staged = ", ".join(f"c{i} {_STAGED} PATH '$[{i}]'" for i in range(len(columns)))
    picked = ", ".join(f"j.c{i}" for i in range(len(columns)))
    sql = (f"INSERT {'IGNORE ' if ignore else ''}INTO {target} "
           f"({', '.join(quote(c) for c in columns)}) SELECT {picked} "
           f"FROM JSON_TABLE(:rows, '$[*]' COLUMNS ({staged})) AS j")
    if add:
        name = quote(add)
        sql += f" ON DUPLICATE KEY UPDATE {name} = COALESCE({target}.{name}, 0) + VALUES({name})"
    return text(sql)


def json_batches(table: Table, rows: Sequence[Mapping[str, Any]], *, ignore: bool = False,
                 add: str = "") -> list[tuple[TextClause, dict[str, str]]] | None:
    """MariaDB: ``rows`` as :func:`json_table_insert` statements of up to :data:`JSON_ROWS`
    rows, with their parameters; None where they cannot go that way (no rows, rows naming
    different columns, a value that is not a plain string, number or NULL, a table with an
    auto-increment key, whose ids an ``INSERT … SELECT`` may hand out otherwise than a VALUES
    list). ``json.dumps`` writes the rows at C speed, where the driver escaped each value in
    Python (about 3 µs a row of a fan-out)."""
    if not rows or table.autoincrement_column is not None:
        return None
    columns = tuple(rows[0])
    names = rows[0].keys()
    values: list[list[Any]] = []
    for row in rows:
        if row.keys() != names:
            return None
        line = [row[c] for c in columns]
        for i, value in enumerate(line):
            if type(value) is bool:
                line[i] = int(value)
            elif not isinstance(value, SCALARS):
                return None
        values.append(line)
    statement = json_table_insert(table, columns, ignore, add)
    return [(statement, {"rows": json.dumps(values[start:start + JSON_ROWS])})
            for start in range(0, len(values), JSON_ROWS)]
