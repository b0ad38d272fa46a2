"""An inbox item's triage state on SQL: the conditions on ``notifications.flags`` that list
a row under a state (:data:`tidings.domain.flags.STATES`), and the snooze times kept beside
the rows (``inbox_snoozes``)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, Connection, delete, literal_column, select

from tidings.domain.flags import INBOX, STATES
from tidings.store.sql.core.database import Database
from tidings.store.sql.schema import inbox_snoozes, notifications

n = notifications.c
z = inbox_snoozes.c
BATCH = 500


def state_condition(state: str) -> ColumnElement[bool]:
    """The rows that list under ``state`` (:data:`tidings.domain.flags.STATES`), by their
    ``flags``. The masks are literals, not parameters: PostgreSQL's partial index of the
    unread rows (migration 0037) names the inbox's condition, ``(flags & 132) = 0``, and a
    query only uses it when its condition is that same text."""
    having, lacking = STATES[state]
    masked = n.flags.op("&")
    if lacking:
        return masked(literal_column(str(lacking))) == literal_column("0")
    return masked(literal_column(str(having))) != literal_column("0")


# the inbox's own state: what the unfiltered page and every count read
IN_INBOX = state_condition(INBOX)


def snoozes(conn: Connection, user: str, groups: Sequence[str]) -> dict[str, int]:
    """The time to return of those of ``user``'s display groups that keep one."""
    found: dict[str, int] = {}
    for start in range(0, len(groups), BATCH):
        found.update((r.display_hash, r.until_at) for r in conn.execute(
            select(z.display_hash, z.until_at).where(
                z.user_id == user, z.display_hash.in_(list(groups[start:start + BATCH])))))
    return found


def keep(db: Database, conn: Connection, user: str, groups: Sequence[str], until: int) -> None:
    """Keep ``until`` as the groups' time to return (replacing an earlier one)."""
    forget(conn, user, groups)
    db.insert_many(conn, inbox_snoozes, [
        {"user_id": user, "display_hash": group, "until_at": until} for group in groups])


def forget(conn: Connection, user: str, groups: Sequence[str]) -> None:
    """Forget the groups' times to return."""
    for start in range(0, len(groups), BATCH):
        conn.execute(delete(inbox_snoozes).where(
            z.user_id == user, z.display_hash.in_(list(groups[start:start + BATCH]))))
