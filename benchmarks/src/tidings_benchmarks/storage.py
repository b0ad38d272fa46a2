"""Bytes on disk of tables, each with its indexes: ``pg_total_relation_size`` on PostgreSQL,
``data_length + index_length`` of ``information_schema.tables`` on MariaDB/MySQL (after
``ANALYZE TABLE``), the pages of the table and its indexes in SQLite's ``dbstat``; and, for the
storage profile, each of a table's relations apart (:func:`relation_bytes`).

Taken after the bench's ``ANALYZE`` (``VACUUM ANALYZE`` on PostgreSQL), so the figures are those
of a maintained database, not of one full of dead rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from tidings_benchmarks.raw import RawConnection


def table_bytes(url: str, tables: Sequence[str]) -> dict[str, int]:
    """Each table's size with its indexes, in bytes (0 for a table that does not exist)."""
    out: dict[str, int] = {}
    with RawConnection(url) as raw:
        for table in tables:
            out[table] = _one(raw, table)
    return out


def _one(raw: RawConnection, table: str) -> int:
    if raw.backend == "postgresql":
        rows = raw.fetch("SELECT coalesce(pg_total_relation_size(to_regclass(%s)), 0)",
                         (table,))
    elif raw.backend == "mysql":
        raw.fetch(f"ANALYZE TABLE `{table}`")
        rows = raw.fetch("SELECT coalesce(sum(data_length + index_length), 0) FROM "
                         "information_schema.tables WHERE table_schema = DATABASE() "
                         "AND table_name = %s", (table,))
    else:
        rows = raw.fetch("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN "
                         "(SELECT name FROM sqlite_master WHERE tbl_name = ?)", (table,))
    return int(rows[0][0]) if rows else 0


def relation_bytes(url: str, table: str) -> dict[str, int]:
    """``table``'s bytes on disk split by relation: ``table`` (the rows: the heap with its
    TOAST, free-space and visibility maps on PostgreSQL; the clustered primary key on
    MariaDB/MySQL, where the rows live; the table's b-tree on SQLite) and each index by name
    (on PostgreSQL the primary key's index is one of them). The values add up to
    :func:`table_bytes` (to a page or so on MariaDB, whose figures are estimates)."""
    with RawConnection(url) as raw:
        if raw.backend == "postgresql":
            rows = raw.fetch("SELECT 'table', pg_table_size(to_regclass(%s)) UNION ALL "
                             "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) "
                             "FROM pg_index WHERE indrelid = to_regclass(%s)", (table, table))
        elif raw.backend == "mysql":
            raw.fetch(f"ANALYZE TABLE `{table}`")
            rows = raw.fetch(
                "SELECT CASE index_name WHEN 'PRIMARY' THEN 'table' ELSE index_name END, "
                "stat_value * @@innodb_page_size FROM mysql.innodb_index_stats "
                "WHERE database_name = DATABASE() AND table_name = %s "
                "AND stat_name = 'size'", (table,))
        else:
            rows = raw.fetch("SELECT CASE name WHEN ? THEN 'table' ELSE name END, "
                             "sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM "
                             "sqlite_master WHERE tbl_name = ?) GROUP BY name",
                             (table, table))
    return {str(name): int(size or 0) for name, size in rows}
