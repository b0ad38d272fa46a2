"""W1's baseline: the timelines seed's own schema and statements (``../seeds/002_…``, as run by
``../shared/bench-anchors/seed_sql_mariadb.py``), re-implemented here and run in the bench's own
database on the same generated data; on PostgreSQL also ``raw_postgresql.py``'s statements, the
raw limit of the same operations.

The seed's three tables sit beside tidings' (``follower``, ``message``, ``mailbox``: the seed's
names and columns; ``follower.user_id`` follows ``follower.follower_id``, as in the seed):

* push submit — ``INSERT INTO message …`` then ``INSERT INTO mailbox (user_id, message_id)
  SELECT user_id, <the new id> FROM follower WHERE follower_id = ?``, one transaction a message
  (the new id: ``last_insert_id()``, SQLite's ``last_insert_rowid()``, PostgreSQL's
  ``lastval()``);
* push first page — the seed's ``SELECT … FROM message INNER JOIN mailbox … ORDER BY
  mailbox.message_id DESC LIMIT 20``; later page — the same below the last id (the seed's keyset
  "WHERE mailbox.message_id < ?");
* pull submit — the one ``INSERT INTO message``, autocommit;
* pull pages — the seed's stored procedures: on MariaDB/MySQL verbatim (``CALL
  fetch_timeline_ids(?)``, ``fetch_timeline_ids2(?, ?)``, then its ``SELECT``); on PostgreSQL
  the same steps as one statement (:data:`PULL_PROCEDURE`: the followees ranked by their newest
  message, the 20 newest of each of the first 20, the newest 20 of those with their rows — the
  cursor's rows and the temporary table's as a CTE and a ``LATERAL``; the procedures ported to
  PL/pgSQL with a temporary table ran at a third of that or less, slower with every call as
  the table bloated); on SQLite, which has neither, the top 20 per followee as a correlated
  subquery.

The mailboxes are the seed's: every message in every follower's mailbox, uncapped.

The raw limit (:class:`RawPostgres`, PostgreSQL only, printed as a table of its own): push
submit as ``raw_postgresql.py``'s one statement (``WITH m AS (INSERT … RETURNING id) INSERT
INTO mailbox SELECT …``, a commit a message), pull pages as its ``CROSS JOIN LATERAL`` top 20
per followee (every followee's, not the first 20's).
"""

from __future__ import annotations

from collections.abc import Callable

from tidings_benchmarks.raw import RawConnection
from tidings_benchmarks.timeline_data import Data, empty_table

ANCHOR_MARIADB = "bench-anchors/seed_sql_mariadb.py"
ANCHOR_PG = "bench-anchors/raw_postgresql.py"
ANCHOR_SEED = "seeds/002 (the seed's SQL)"

SCHEMA = {
    # the seed verbatim
    "mysql": [
        "CREATE TABLE `follower` (`user_id` int(10) unsigned NOT NULL, `follower_id` int(10) "
        "unsigned NOT NULL, PRIMARY KEY (`user_id`,`follower_id`), KEY `follower_id` "
        "(`follower_id`))",
        "CREATE TABLE `message` (`id` int(10) unsigned NOT NULL AUTO_INCREMENT, `user_id` "
        "int(10) unsigned NOT NULL, `body` varchar(255) NOT NULL, PRIMARY KEY (`id`), KEY "
        "`user_id_id` (`user_id`,`id`))",
        "CREATE TABLE `mailbox` (`user_id` int(10) unsigned NOT NULL, `message_id` int(10) "
        "unsigned NOT NULL, PRIMARY KEY (`user_id`,`message_id`))",
    ],
    # raw_postgresql.py's types, the seed's columns and keys
    "postgresql": [
        "CREATE TABLE follower (user_id int NOT NULL, follower_id int NOT NULL, "
        "PRIMARY KEY (user_id, follower_id))",
        "CREATE INDEX follower_follower_id ON follower (follower_id, user_id)",
        "CREATE TABLE message (id bigserial PRIMARY KEY, user_id int NOT NULL, body text NOT "
        "NULL)",
        "CREATE INDEX message_user_id_id ON message (user_id, id)",
        "CREATE TABLE mailbox (user_id int NOT NULL, message_id bigint NOT NULL, "
        "PRIMARY KEY (user_id, message_id))",
    ],
    "sqlite": [
        "CREATE TABLE follower (user_id INTEGER NOT NULL, follower_id INTEGER NOT NULL, "
        "PRIMARY KEY (user_id, follower_id)) WITHOUT ROWID",
        "CREATE INDEX follower_follower_id ON follower (follower_id)",
        "CREATE TABLE message (id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER NOT NULL, "
        "body VARCHAR(255) NOT NULL)",
        "CREATE INDEX message_user_id_id ON message (user_id, id)",
        "CREATE TABLE mailbox (user_id INTEGER NOT NULL, message_id INTEGER NOT NULL, "
        "PRIMARY KEY (user_id, message_id)) WITHOUT ROWID",
    ],
}
TABLES = ("follower", "message", "mailbox")

PROCEDURES = [
    """CREATE PROCEDURE fetch_timeline_ids (IN uid int unsigned)
BEGIN
  DECLARE fid,maxid int unsigned;
  DECLARE done int DEFAULT 0;
  DECLARE fid_maxid_cur CURSOR FOR
    SELECT follower_id,(
      SELECT id FROM message WHERE user_id=follower.follower_id
      ORDER BY user_id DESC,id DESC LIMIT 1) AS max_id
    FROM follower WHERE user_id=uid ORDER BY max_id DESC LIMIT 20;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done=1;
  CREATE TEMPORARY TABLE IF NOT EXISTS fetch_timeline_tt (
    id int unsigned NOT NULL PRIMARY KEY
  ) ENGINE=heap DEFAULT CHARSET=utf8;
  DELETE FROM fetch_timeline_tt;
  OPEN fid_maxid_cur;
  REPEAT
    FETCH fid_maxid_cur INTO fid,maxid;
    IF NOT done THEN
      INSERT INTO fetch_timeline_tt
        SELECT id FROM message WHERE user_id=fid
        ORDER BY id DESC LIMIT 20;
    END IF;
  UNTIL done END REPEAT;
  CLOSE fid_maxid_cur;
END""",
    """CREATE PROCEDURE build_max_ids_of_followers (IN uid int unsigned,IN max_id int unsigned)
BEGIN
  DECLARE fid int unsigned;
  DECLARE done int DEFAULT 0;
  DECLARE fcur CURSOR FOR
    SELECT follower_id FROM follower WHERE user_id=uid;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done=1;
  CREATE TEMPORARY TABLE IF NOT EXISTS max_ids_of_followers (
    user_id int unsigned NOT NULL,
    max_id int unsigned NOT NULL
  ) ENGINE=heap DEFAULT CHARSET=utf8;
  DELETE FROM max_ids_of_followers;
  OPEN fcur;
  REPEAT
    FETCH fcur INTO fid;
    IF NOT done THEN
      INSERT INTO max_ids_of_followers SELECT fid,max(id) AS m FROM message
        WHERE user_id=fid AND id<=max_id HAVING NOT ISNULL(m);
    END IF;
  UNTIL done END REPEAT;
  CLOSE fcur;
END""",
    """CREATE PROCEDURE fetch_timeline_ids2 (IN uid int unsigned,IN maxid int unsigned)
BEGIN
  DECLARE fid,fmaxid int unsigned;
  DECLARE done int DEFAULT 0;
  DECLARE fid_maxid_cur CURSOR FOR
    SELECT user_id,max_id FROM max_ids_of_followers
    ORDER BY max_id DESC LIMIT 20;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done=1;
  CREATE TEMPORARY TABLE IF NOT EXISTS fetch_timeline_tt (
    id int unsigned NOT NULL PRIMARY KEY
  ) ENGINE=heap DEFAULT CHARSET=utf8;
  DELETE FROM fetch_timeline_tt;
  CALL build_max_ids_of_followers(uid,maxid);
  OPEN fid_maxid_cur;
  REPEAT
    FETCH fid_maxid_cur INTO fid,fmaxid;
    IF NOT done THEN
      INSERT INTO fetch_timeline_tt
        SELECT id FROM message
        WHERE user_id=fid AND id<=fmaxid
        ORDER BY id DESC LIMIT 20;
    END IF;
  UNTIL done END REPEAT;
  CLOSE fid_maxid_cur;
END""",
]

PUSH_SUBMIT = {
    "mysql": ("INSERT INTO message (user_id,body) VALUES (%s,%s)",
              "INSERT INTO mailbox (user_id,message_id)\n"
              "    SELECT user_id,last_insert_id() FROM follower WHERE follower_id=%s"),
    "sqlite": ("INSERT INTO message (user_id,body) VALUES (%s,%s)",
               "INSERT INTO mailbox (user_id,message_id)\n"
               "    SELECT user_id,last_insert_rowid() FROM follower WHERE follower_id=%s"),
    "postgresql": ("INSERT INTO message (user_id,body) VALUES (%s,%s)",
                   "INSERT INTO mailbox (user_id,message_id)\n"
                   "    SELECT user_id,lastval() FROM follower WHERE follower_id=%s"),
}
PUSH_SUBMIT_PG = ("WITH m AS (INSERT INTO message (user_id, body) VALUES (%s, %s) RETURNING id, "
                  "user_id) INSERT INTO mailbox SELECT f.user_id, m.id FROM m JOIN follower f "
                  "ON f.follower_id = m.user_id")
PUSH_PAGE = ("SELECT message.id,message.user_id,message.body FROM message\n"
             "    INNER JOIN mailbox ON message.id=mailbox.message_id\n"
             "    WHERE mailbox.user_id=%s{below}\n"
             "    ORDER BY mailbox.message_id DESC LIMIT 20")
PULL_SUBMIT = "INSERT INTO message (user_id,body) VALUES (%s,%s)"
# fetch_timeline_ids (first page) and fetch_timeline_ids2 (below an id) as one PostgreSQL
# statement each: the procedures' cursor (each followee with its newest message id, at most
# the given id, the first 20 by it; MySQL sorts a NULL last when descending, PostgreSQL is
# told to), the 20 newest ids of each into the temporary table, then the procedures' SELECT
PULL_PROCEDURE = (
    "WITH top AS (SELECT follower_id, (SELECT {newest} FROM message WHERE "
    "user_id=follower.follower_id{upto}) AS max_id FROM follower WHERE user_id=%s "
    "ORDER BY max_id DESC NULLS LAST LIMIT 20), "
    "fetch_timeline_tt AS (SELECT tt.id FROM top CROSS JOIN LATERAL (SELECT id FROM message "
    "WHERE user_id=top.follower_id{below_top} ORDER BY id DESC LIMIT 20) tt) "
    "SELECT message.id,user_id,body FROM message INNER JOIN fetch_timeline_tt USING(id) "
    "ORDER BY message.id DESC LIMIT 20")
PULL_PROCEDURE_PG = (
    PULL_PROCEDURE.format(newest="id", upto=" ORDER BY user_id DESC,id DESC LIMIT 1",
                          below_top=""),
    PULL_PROCEDURE.format(newest="max(id)", upto=" AND id<=%s",
                          below_top=" AND id<=top.max_id"))
PULL_PAGE = {
    "postgresql": ("SELECT x.id, x.user_id, x.body FROM follower f CROSS JOIN LATERAL "
                   "(SELECT id, user_id, body FROM message m WHERE m.user_id = f.follower_id"
                   "{below} ORDER BY id DESC LIMIT 20) x WHERE f.user_id = %s "
                   "ORDER BY x.id DESC LIMIT 20"),
    "sqlite": ("SELECT m.id, m.user_id, m.body FROM follower f JOIN message m ON m.id IN "
               "(SELECT id FROM message WHERE user_id = f.follower_id{below} ORDER BY id DESC "
               "LIMIT 20) WHERE f.user_id = %s ORDER BY m.id DESC LIMIT 20"),
}
PULL_CALL = ("CALL fetch_timeline_ids(%s)", "CALL fetch_timeline_ids2(%s, %s)")
PULL_SELECT = ("SELECT message.id,user_id,body FROM message\n"
               "  INNER JOIN fetch_timeline_tt USING(id)\n"
               "  ORDER BY message.id DESC LIMIT 20")

Row = tuple[object, ...]


def statements(backend: str) -> dict[str, tuple[str, str]]:
    """What each baseline figure runs on ``backend`` and where it comes from, by
    "model: figure"."""
    mysql, pg = backend == "mysql", backend == "postgresql"
    anchor = ANCHOR_MARIADB if mysql else ANCHOR_SEED
    pull_first = (f"{PULL_CALL[0]}; {PULL_SELECT}" if mysql else PULL_PROCEDURE_PG[0] if pg
                  else PULL_PAGE[backend].format(below=""))
    pull_later = (f"{PULL_CALL[1]}; {PULL_SELECT}" if mysql else PULL_PROCEDURE_PG[1] if pg
                  else PULL_PAGE[backend].format(below=" AND id < %s"))
    how = (" (stored procedure)" if mysql else " (the stored procedure's steps in one "
           "statement)" if pg else " (top 20 per followee)")
    return {
        "push: submit": ("; ".join(PUSH_SUBMIT[backend]) + "; COMMIT",
                         f"{anchor}: push submit (message + mailbox fan-out, one transaction)"),
        "push: first page": (PUSH_PAGE.format(below=""), f"{anchor}: push retrieval"),
        "push: later page": (PUSH_PAGE.format(below=" AND mailbox.message_id<%s"),
                             f"{ANCHOR_PG}: push keyset page 2+"),
        "pull: submit": (PULL_SUBMIT, f"{anchor}: pull submit (1 INSERT, autocommit)"),
        "pull: first page": (pull_first, f"{anchor}: fetch_timeline_ids{how}"),
        "pull: later page": (pull_later, f"{anchor}: fetch_timeline_ids2{how}"),
    }



def raw_statements() -> dict[str, tuple[str, str]]:
    """What each raw-limit figure runs (PostgreSQL), by "model: figure"."""
    return {
        "push: submit": (PUSH_SUBMIT_PG, f"{ANCHOR_PG}: push submit, msg + fan-out in one "
                                         "statement, commit each"),
        "pull: first page": (PULL_PAGE["postgresql"].format(below=""),
                             f"{ANCHOR_PG}: LATERAL top-20 per followee"),
        "pull: later page": (PULL_PAGE["postgresql"].format(below=" AND id < %s"),
                             f"{ANCHOR_PG}: LATERAL top-20 per followee, below an id"),
    }


def create(url: str) -> None:
    """The seed's tables (and on MariaDB/MySQL its stored procedures) in the bench database."""
    with RawConnection(url) as raw:
        for statement in SCHEMA[raw.backend]:
            raw.execute(statement)
        if raw.backend == "mysql":
            for procedure in PROCEDURES:
                raw.execute(procedure)


def load(url: str, data: Data, progress: Callable[[int], object]) -> int:
    """The seed's load: followers, messages (the same ids and bodies as tidings' events), and
    every message in every follower's mailbox (``INSERT … SELECT`` by blocks of 10,000
    messages, in id order); returns the mailbox rows."""
    with RawConnection(url, autocommit=False) as raw:
        raw.write_rows("follower", ("user_id", "follower_id"), data.edges)
        raw.write_rows("message", ("id", "user_id", "body"),
                       ((i, s, b) for i, (s, b) in enumerate(
                           zip(data.senders, data.bodies, strict=True), 1)), batch=5000)
        if raw.backend == "postgresql":
            raw.execute("SELECT setval(pg_get_serial_sequence('message', 'id'), "
                        "(SELECT max(id) FROM message))")
        raw.commit()
        written = 0
        fill = raw.sql("INSERT INTO mailbox (user_id, message_id) SELECT f.user_id, m.id "
                       "FROM message m JOIN follower f ON f.follower_id = m.user_id "
                       "WHERE m.id BETWEEN %s AND %s")
        for start in range(1, data.messages + 1, 10_000):
            last = min(start + 9_999, data.messages)
            written += raw.execute(fill, (start, last))
            raw.commit()
            progress(last - start + 1)
    return written


def empty(url: str) -> None:
    """No rows in the seed's tables (before a graph's data is loaded)."""
    with RawConnection(url, autocommit=False) as raw:
        for table in reversed(TABLES):
            raw.execute(empty_table(raw.backend, table))
        raw.commit()


def remove_submitted(url: str, messages: int) -> None:
    """Delete the messages (and mailbox rows) the submit rounds added."""
    with RawConnection(url, autocommit=False) as raw:
        raw.execute(raw.sql("DELETE FROM mailbox WHERE message_id > %s"), (messages,))
        raw.execute(raw.sql("DELETE FROM message WHERE id > %s"), (messages,))
        raw.commit()


class SeedTimelines:
    """The seed's statements on two driver connections: one that commits per transaction
    (push submit), one in autocommit (pull submit, the reads)."""

    def __init__(self, url: str) -> None:
        self.tx = RawConnection(url, autocommit=False)
        self.auto = RawConnection(url, autocommit=True)
        self.backend = self.auto.backend
        sql = self.auto.sql
        self._push_page = sql(PUSH_PAGE.format(below=""))
        self._push_later = sql(PUSH_PAGE.format(below=" AND mailbox.message_id<%s"))
        self._pull_submit = sql(PULL_SUBMIT)
        # PostgreSQL runs the procedures' steps, whose later page reads "id <= max id"
        self._procedure = self.backend == "postgresql"
        if self._procedure:
            self._pull_page, self._pull_later = PULL_PROCEDURE_PG
        elif self.backend != "mysql":
            self._pull_page = sql(PULL_PAGE[self.backend].format(below=""))
            self._pull_later = sql(PULL_PAGE[self.backend].format(below=" AND id < %s"))
        self._push_submit = tuple(sql(s) for s in PUSH_SUBMIT[self.backend])

    def push_submit(self, sender: int, body: str) -> int:
        """One message into its sender's followers' mailboxes, committed; mailbox rows."""
        self.tx.execute(self._push_submit[0], (sender, body))
        written = self.tx.execute(self._push_submit[1], (sender,))
        self.tx.commit()
        return written

    def pull_submit(self, sender: int, body: str) -> None:
        self.auto.execute(self._pull_submit, (sender, body))

    def push_page(self, user: int, below: int | None = None) -> list[Row]:
        if below is None:
            return self.auto.fetch(self._push_page, (user,))
        return self.auto.fetch(self._push_later, (user, below))

    def pull_page(self, user: int, below: int | None = None) -> list[Row]:
        if self.backend == "mysql":
            if below is None:
                self.auto.fetch(PULL_CALL[0], (user,))
            else:  # the seed's procedure reads "id <= max id"
                self.auto.fetch(PULL_CALL[1], (user, below - 1))
            return self.auto.fetch(PULL_SELECT)
        if below is None:
            return self.auto.fetch(self._pull_page, (user,))
        if self._procedure:  # fetch_timeline_ids2(uid, max id)
            return self.auto.fetch(self._pull_later, (below - 1, user))
        return self.auto.fetch(self._pull_later, (below, user))  # the subquery's comes first

    def close(self) -> None:
        self.tx.close()
        self.auto.close()


class RawPostgres(SeedTimelines):
    """``raw_postgresql.py``'s statements where they differ from the seed's: the raw limit."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._procedure = False
        self._pull_page = PULL_PAGE["postgresql"].format(below="")
        self._pull_later = PULL_PAGE["postgresql"].format(below=" AND id < %s")

    def push_submit(self, sender: int, body: str) -> int:
        written = self.tx.execute(PUSH_SUBMIT_PG, (sender, body))
        self.tx.commit()
        return written
