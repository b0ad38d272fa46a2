"""Run the Alembic migrations that ship inside the package, with no ``alembic.ini``.

The configuration is built in code: ``script_location`` points at the SQL store's ``migrations``
folder and the store URL travels in ``config.attributes``, never in a file. Revisions are
numbered ``0001``, ``0002``… so their order reads off the file names.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from tidings.exceptions import SchemaOutOfDate
from tidings.store.sql.core.database import Database

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def declared_for(dialect: str) -> Callable[..., bool]:
    """Alembic's ``include_object`` for a database of ``dialect``: every declared object but
    those declared for another dialect only (``ddl_if``), which autogenerate would otherwise
    count as missing there."""

    def include(obj: Any, _name: str | None, _type: str, reflected: bool,
                _compare_to: Any) -> bool:
        only = getattr(obj, "_ddl_if", None)
        if reflected or only is None or only.dialect is None:
            return True
        named = (only.dialect,) if isinstance(only.dialect, str) else tuple(only.dialect)
        return dialect in named

    return include


def _config(url: str | None = None) -> Config:
    config = Config()
    # set_main_option goes through ConfigParser interpolation, hence the doubled percent signs.
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.set_main_option("file_template", "%%(rev)s_%%(slug)s")
    if url is not None:
        config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate the database at ``url`` up to ``revision`` (default: the newest)."""
    command.upgrade(_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    """Migrate the database at ``url`` down to ``revision`` (``"base"`` drops every table)."""
    command.downgrade(_config(url), revision)


def head_revision() -> str:
    """The revision this version of tidings needs."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    if head is None:
        raise AssertionError(f"no migrations found in {MIGRATIONS}")
    return head


def current_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at, or None if it was never migrated."""
    db = Database(url, pool_size=0)
    try:
        return _current(db)
    finally:
        db.dispose()


def check_schema_current(db: Database) -> None:
    """Raise :class:`SchemaOutOfDate` unless the database is at :func:`head_revision`."""
    current = _current(db)
    head = head_revision()
    if current == head:
        return
    if current is None:
        raise SchemaOutOfDate("the database has no tidings schema yet; run `tidings migrate`")
    known = {script.revision for script in ScriptDirectory.from_config(_config()).walk_revisions()}
    if current not in known:
        raise SchemaOutOfDate(
            f"the database is at revision {current}, which this version of tidings does not "
            f"know (it needs {head}); was it migrated by a newer tidings? Upgrade tidings, or "
            "run `tidings migrate` from this version on a fresh database"
        )
    raise SchemaOutOfDate(
        f"the database schema is at revision {current} but this tidings needs {head}; "
        "run `tidings migrate`"
    )


def new_revision(url: str, message: str) -> Path:
    """Autogenerate the next numbered revision by comparing ``schema.metadata`` with the database
    at ``url`` (which must be at head). A developer tool: review and tidy the file it writes."""
    script = ScriptDirectory.from_config(_config())
    numbers = [int(s.revision) for s in script.walk_revisions() if s.revision.isdigit()]
    rev_id = f"{max(numbers, default=0) + 1:04d}"
    command.revision(_config(url), message=message, autogenerate=True, rev_id=rev_id)
    return Path(ScriptDirectory.from_config(_config()).get_revision(rev_id).path)


def _current(db: Database) -> str | None:
    with db.read() as conn:
        return MigrationContext.configure(conn).get_current_revision()
