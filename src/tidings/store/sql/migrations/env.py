"""Alembic's entry point for tidings' migrations.

There is no ``alembic.ini``: :mod:`tidings.store.sql.core.migrate` builds the configuration in
code and passes the store URL in ``config.attributes["url"]``, so passwords never sit in a file
and the migrations ship inside the package.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, make_url

from tidings.store.sql.core.database import Database, normalise_url
from tidings.store.sql.core.migrate import declared_for
from tidings.store.sql.core.timeouts import SqlTimeouts
from tidings.store.sql.schema import metadata

# a schema change on a large table (an index built over every row) may take long: no limit
SCHEMA_CHANGES = SqlTimeouts(statement=None)


def run_offline(url: str) -> None:
    """Write the SQL instead of running it (``--sql``), for DBAs who apply it by hand."""
    context.configure(
        url=normalise_url(url),
        literal_binds=True,
        target_metadata=metadata,
        compare_type=True,
        render_as_batch=True,
        include_object=declared_for(make_url(normalise_url(url)).get_backend_name()),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online(connection: Connection) -> None:
    """Run the migrations on ``connection``."""
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        include_object=declared_for(connection.dialect.name),
        # Batch mode makes autogenerate write ALTERs that SQLite can run (by rebuilding the
        # table) and that the other backends run as plain ALTER TABLE.
        render_as_batch=True,
        # Database makes SQLite transactions real (isolation_level=None, then BEGIN IMMEDIATE),
        # so a migration there is all-or-nothing, as on PostgreSQL. MariaDB commits each DDL.
        transactional_ddl=connection.dialect.name in ("sqlite", "postgresql"),
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    url = context.config.attributes.get("url")
    if not isinstance(url, str):
        raise RuntimeError(
            "tidings migrations need config.attributes['url']; run them through "
            "tidings.store.sql.core.migrate or `tidings migrate`"
        )
    if context.is_offline_mode():
        run_offline(url)
        return
    db = Database(url, pool_size=0, timeouts=SCHEMA_CHANGES)
    try:
        with db.engine.connect() as connection:
            run_online(connection)
    finally:
        db.dispose()


main()
