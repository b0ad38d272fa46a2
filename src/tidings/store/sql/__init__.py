"""SQLAlchemy Core adapters for SQLite, PostgreSQL and MariaDB/MySQL."""
