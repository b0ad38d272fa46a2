"""Alembic migrations, run through :mod:`tidings.store.sql.core.migrate` (no alembic.ini)."""
