"""PostgreSQL bulk writes: every column of any number of rows sent as one array."""

from __future__ import annotations

import functools

from sqlalchemy import Table, TextClause, text
from sqlalchemy.dialects import postgresql as pg_dialect

_PG = pg_dialect.dialect()  # type: ignore[no-untyped-call]


@functools.lru_cache(maxsize=256)
def unnest_insert(table: Table, columns: tuple[str, ...], ignore: bool,
                   keys: tuple[str, ...] = (), add: str = "",
                   returning: tuple[str, ...] = ()) -> TextClause:
    """PostgreSQL: one INSERT of any number of rows, each column sent as one array
    (``INSERT … SELECT * FROM unnest(…)``). Its text is the same whatever the row count, so it
    is parsed once (and prepared by psycopg once it recurs), where a multi-row VALUES list is a
    new, long statement to build, send and plan for every batch."""
    quote = _PG.identifier_preparer.quote
    arrays = ", ".join(f"CAST(:c{i} AS {table.c[c].type.compile(dialect=_PG)}[])"
                       for i, c in enumerate(columns))
    sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
           f"SELECT * FROM unnest({arrays})")
    if ignore:
        sql += " ON CONFLICT DO NOTHING"
    elif add:  # an existing key adds the row's value to the stored one (NULL counting 0)
        name, target = quote(add), quote(table.name)
        sql += (f" ON CONFLICT ({', '.join(quote(k) for k in keys)}) DO UPDATE SET {name} = "
                f"COALESCE({target}.{name}, 0) + excluded.{name}")
    if returning:
        sql += " RETURNING " + ", ".join(quote(c) for c in returning)
    return text(sql)
