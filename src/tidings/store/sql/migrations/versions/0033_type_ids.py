"""notifications name their type by a small integer; category and section are the type's

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-29 09:10:00.000000

Every notification row copied its event's type (up to 64 characters), the type's category (up
to 64) and section (up to 16). A row now holds ``type_id`` (SMALLINT), the type's id in the
new dictionary ``inbox_types`` (id, name, category, section), as Echo keeps only the event
type per notification and maps category and section from the type when it reads.

The dictionary is filled from the rows' distinct (type, category, section): where a type's
rows carry several categories or sections (the type was declared again, changed), the newest
rows' win (those with the latest created_at; where two such pairs tie on it, the one whose
rows reach the greater event id), and every row of the type reads as them from now on.
Each row takes its type's id, then ``type``, ``category`` and ``section`` go. No index names
them: every index stays as it is (SQLite and MariaDB rebuild them with the table).

The downgrade puts the three columns back, filled from the dictionary (every row of a type
then carries the category and section its dictionary row holds), and drops ``type_id`` and
the dictionary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = '0033'
down_revision: str | Sequence[str] | None = '0032'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL: dict[str, Any] = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4', 'mysql_collate': 'utf8mb4_bin'}
# the rows grouped by (type, category, section), each group with its latest created_at and its
# greatest event id (one scan of the table)
NEWEST = sa.text("""
SELECT type, category, section, max(created_at) AS created_at, max(event_id) AS event_id
FROM notifications GROUP BY type, category, section""")
OLD_COLUMNS = (('type', 64), ('category', 64), ('section', 16))


def _definitions(conn: sa.Connection) -> list[tuple[str, str, str]]:
    """Each stored type once, with the category and section of its newest rows (ties on the
    time broken by the greater event id)."""
    newest: dict[str, tuple[tuple[int, int], str, str]] = {}
    for name, category, section, created_at, event_id in conn.execute(NEWEST):
        place = (created_at, event_id)
        if name not in newest or place > newest[name][0]:
            newest[name] = (place, category, section)
    return [(name, category, section) for name, (_, category, section) in sorted(newest.items())]


def upgrade() -> None:
    conn = op.get_bind()
    dialect = conn.dialect.name
    inbox_types = op.create_table(
        'inbox_types',
        sa.Column('id', sa.SmallInteger().with_variant(sa.Integer(), 'sqlite'),
                  primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(length=64), nullable=False),
        sa.Column('category', sa.String(length=64), nullable=False),
        sa.Column('section', sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_inbox_types')),
        sa.UniqueConstraint('name', name=op.f('uq_inbox_types_name')),
        **MYSQL,
    )
    definitions = _definitions(conn)
    if definitions:  # ids 1, 2, … in name order
        op.bulk_insert(inbox_types, [{'id': i, 'name': name, 'category': category,
                                      'section': section}
                                     for i, (name, category, section)
                                     in enumerate(definitions, start=1)])
        if dialect == 'postgresql':  # the serial goes on after them
            op.execute("SELECT setval(pg_get_serial_sequence('inbox_types', 'id'), "
                       "(SELECT max(id) FROM inbox_types))")
    # nullable first (no default to write), filled, then NOT NULL with the old columns gone
    op.add_column('notifications', sa.Column('type_id', sa.SmallInteger(), nullable=True))
    if dialect == 'mysql':
        op.execute("UPDATE notifications n JOIN inbox_types t ON t.name = n.type "
                   "SET n.type_id = t.id")
        op.execute("ALTER TABLE notifications MODIFY type_id SMALLINT NOT NULL, "
                   "DROP COLUMN type, DROP COLUMN category, DROP COLUMN section")
        return
    if dialect == 'postgresql':
        op.execute("UPDATE notifications n SET type_id = t.id FROM inbox_types t "
                   "WHERE t.name = n.type")
        op.execute("ALTER TABLE notifications ALTER COLUMN type_id SET NOT NULL, "
                   "DROP COLUMN type, DROP COLUMN category, DROP COLUMN section")
        return
    op.execute("UPDATE notifications SET type_id = "
               "(SELECT t.id FROM inbox_types t WHERE t.name = notifications.type)")
    with op.batch_alter_table('notifications') as batch:  # SQLite: the table copied
        batch.alter_column('type_id', existing_type=sa.SmallInteger(), nullable=False)
        for column, _ in OLD_COLUMNS:
            batch.drop_column(column)


def downgrade() -> None:
    conn = op.get_bind()
    dialect = conn.dialect.name
    for column, length in OLD_COLUMNS:
        op.add_column('notifications', sa.Column(column, sa.String(length=length),
                                                 nullable=True))
    if dialect == 'mysql':
        op.execute("UPDATE notifications n JOIN inbox_types t ON t.id = n.type_id "
                   "SET n.type = t.name, n.category = t.category, n.section = t.section")
        op.execute("ALTER TABLE notifications MODIFY type VARCHAR(64) NOT NULL, "
                   "MODIFY category VARCHAR(64) NOT NULL, MODIFY section VARCHAR(16) NOT NULL, "
                   "DROP COLUMN type_id")
    elif dialect == 'postgresql':
        op.execute("UPDATE notifications n SET type = t.name, category = t.category, "
                   "section = t.section FROM inbox_types t WHERE t.id = n.type_id")
        op.execute("ALTER TABLE notifications ALTER COLUMN type SET NOT NULL, "
                   "ALTER COLUMN category SET NOT NULL, ALTER COLUMN section SET NOT NULL, "
                   "DROP COLUMN type_id")
    else:
        op.execute(
            "UPDATE notifications SET "
            "type = (SELECT t.name FROM inbox_types t WHERE t.id = notifications.type_id), "
            "category = (SELECT t.category FROM inbox_types t "
            "WHERE t.id = notifications.type_id), "
            "section = (SELECT t.section FROM inbox_types t WHERE t.id = notifications.type_id)")
        with op.batch_alter_table('notifications') as batch:
            for column, length in OLD_COLUMNS:
                batch.alter_column(column, existing_type=sa.String(length=length),
                                   nullable=False)
            batch.drop_column('type_id')
    op.drop_table('inbox_types')
