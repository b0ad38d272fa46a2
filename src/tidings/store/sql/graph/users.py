"""The ``users`` rows on SQL as a user's own writes see them: registering a user, and their join
date (the rows' other column, the inbox bound, is fan-out's: :mod:`.inboxcap`).

Fan-out holds the ``users`` rows of the users it writes to until it ends (``InboxStore.hold``,
the bound's upsert). An insert that meets an existing key waits for that row's lock — InnoDB
takes a shared lock on the duplicate, PostgreSQL's ``ON CONFLICT`` waits for the updater — so
registering a known user that way made a settings write, a subscribe or a follow queue behind a
fan-out to that user. A plain read, which takes no lock, answers first; only a new user is
inserted.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select, update

from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import users

u = users.c


def add_user(db: Database, conn: Connection, user: str, now: int) -> bool:
    """Register ``user`` dated ``now``; False, locking nothing, if they are known."""
    if conn.execute(select(u.user_id).where(u.user_id == user)).first():
        return False
    return conn.execute(db.insert_ignore(users).values(user_id=user, created_at=now)
                        ).rowcount == 1


def set_joined(conn: Connection, user: str, joined: int) -> None:
    conn.execute(update(users).where(u.user_id == user).values(created_at=joined))


def joined(db: Database, conn: Connection, names: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for part in db.parts(list(dict.fromkeys(names))):
        found.update((r.user_id, r.created_at) for r in conn.execute(
            select(u.user_id, u.created_at).where(db.among(u.user_id, part))))
    return found
