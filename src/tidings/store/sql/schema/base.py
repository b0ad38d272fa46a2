"""What every table of the declared schema shares: the metadata (its naming convention), the
MariaDB/MySQL table options and the auto-incremented key type (``schema``, ``schema_hot``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Integer, MetaData

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

# Binary collation on MariaDB/MySQL so user ids and keys compare exactly, as on the others.
NOT_PG: Any = ("sqlite", "mysql", "mariadb")  # ddl_if takes a tuple of names; its stubs, one
MYSQL: dict[str, Any] = {
    "mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin",
}

# SQLite only auto-increments an INTEGER PRIMARY KEY.
Serial = BigInteger().with_variant(Integer(), "sqlite")
