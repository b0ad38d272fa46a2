"""Alembic migrations, run through :mod:`tidings.store.sql.migrate` (no alembic.ini)."""
