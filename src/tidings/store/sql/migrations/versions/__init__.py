"""One module per schema revision, numbered in order; Alembic loads them by path."""
