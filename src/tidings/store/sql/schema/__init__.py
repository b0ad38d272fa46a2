"""The schema, declared once. Alembic migrations must produce exactly this (a test checks).

Times are integer microseconds since the epoch (UTC). Read state follows Gazelle's witness
tables: ``read_markers`` holds narrow per-user watermarks, so "mark all read" writes one row.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects import mysql

from tidings.domain.events import DEFAULT_SCOPE
from tidings.domain.flags import HIDDEN
from tidings.store.sql.core.hashes import Hash64

# the shared metadata and conventions; the hot store's table and the rate limit's have modules
# of their own
from tidings.store.sql.schema.base import MYSQL as MYSQL
from tidings.store.sql.schema.base import NAMING as NAMING
from tidings.store.sql.schema.base import NOT_PG as NOT_PG
from tidings.store.sql.schema.base import Serial as Serial
from tidings.store.sql.schema.base import metadata as metadata
from tidings.store.sql.schema.hot import hot_journal as hot_journal
from tidings.store.sql.schema.limits import rate_buckets as rate_buckets
from tidings.store.sql.schema.push import push_subscriptions as push_subscriptions

# Per-user rows fan-out chunks update (the mailboxes' counts): room on their pages
# (PostgreSQL) so an update stays on its page without a new index entry (0017).
ROOM_TO_UPDATE: dict[str, Any] = {"postgresql_with": {"fillfactor": 70}}

USER, TYPE, OBJECT, SCOPE = 255, 64, 255, 64

events = Table(
    "events",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("type", String(TYPE), nullable=False),
    Column("actor", String(USER)),
    Column("object", String(OBJECT)),
    Column("payload", Text, nullable=False),
    Column("recipients", Text, nullable=False),
    Column("exclude", Text, nullable=False),
    # A key is unique per scope (one per server key over HTTP, ``default`` for the library).
    Column("idempotency_scope", String(SCOPE), nullable=False, server_default=DEFAULT_SCOPE),
    Column("idempotency_key", String(255)),
    Column("body_hash", String(64), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("retracted_at", BigInteger),
    UniqueConstraint("idempotency_scope", "idempotency_key"),
    Index(None, "type", "object"),
    Index(None, "actor", "type"),
    Index(None, "object"),
    Index(None, "created_at"),
    # a followee's newest events in the timeline's order (the pull model's read); on PostgreSQL
    # only those not retracted, with their type: an index-only scan (migration 0014), actors
    # compared byte by byte (0015), by time since 0027
    Index(None, "actor", "created_at", "id", postgresql_include=["type"],
          postgresql_where=text("retracted_at IS NULL"),
          postgresql_ops={"actor": "varchar_pattern_ops"}),
    # SQLite and MariaDB: the pull read from an index alone, by time within (actor, type), the id
    # in every entry (no partial index on MariaDB; SQLite would still read each row: 0018, 0020)
    Index("ix_events_actor_type_retracted_at_created_at", "actor", "type", "retracted_at",
          "created_at").ddl_if(dialect=NOT_PG),
    # SQLite would otherwise hand the highest id out again once that event is deleted
    sqlite_autoincrement=True,
    **MYSQL,
)

event_types = Table(
    "event_types",
    metadata,
    Column("name", String(TYPE), primary_key=True),
    Column("definition", Text, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    **MYSQL,
)

# Every user known: registered by their first write or delivery, and not written again by
# deliveries (no count of their notifications: the inbox cap checks the rows themselves, about
# one delivery in a margin per user, ``tidings.domain.inboxcap``).
users = Table(
    "users",
    metadata,
    Column("user_id", String(USER), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
    **MYSQL,
)

subscriptions = Table(
    "subscriptions",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("user_id", String(USER), nullable=False),
    Column("type", String(TYPE), nullable=False),
    Column("object", String(OBJECT), nullable=False),
    Column("channels", String(255), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger),  # µs; NULL: for good
    UniqueConstraint("user_id", "type", "object"),
    Index(None, "type", "object", "user_id"),
    **MYSQL,
)

follows = Table(
    "follows",
    metadata,
    Column("follower", String(USER), nullable=False),
    Column("followee", String(USER), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("follower", "followee"),
    Index(None, "followee", "follower"),
    **MYSQL,
)

mutes = Table(
    "mutes",
    metadata,
    Column("user_id", String(USER), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("value", String(OBJECT), nullable=False),
    PrimaryKeyConstraint("user_id", "kind", "value"),
    **MYSQL,
)

# Groups for privacy rules ("group:NAME"): who may hear of a type's events.
group_members = Table(
    "group_members",
    metadata,
    Column("group_name", String(TYPE), nullable=False),
    Column("user_id", String(USER), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("group_name", "user_id"),
    **MYSQL,
)

preferences = Table(
    "preferences",
    metadata,
    Column("user_id", String(USER), primary_key=True),
    Column("data", Text, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    **MYSQL,
)

# The inbox's types dictionary (Echo's way: a notification names its event type; category and
# section are the type's): a small integer per type name, with the category and section the
# type had at its latest delivery. Fan-out adds a type the first time it delivers one (and
# updates its row when a re-declared type changed them: every stored notification of the type
# then reads as the new category and section). Reads join it for the names, and filters by
# type, category or section become ``type_id IN`` its ids.
inbox_types = Table(
    "inbox_types",
    metadata,
    Column("id", SmallInteger().with_variant(Integer(), "sqlite"), primary_key=True,
           autoincrement=True),
    Column("name", String(TYPE), nullable=False),
    Column("category", String(TYPE), nullable=False),
    Column("section", String(16), nullable=False),
    UniqueConstraint("name"),
    **MYSQL,
)

# One row per (user, event). ``bundle_base`` marks the newest member of each display group:
# lists and unread counts read base rows only, through an index, with no GROUP BY. ``fresh_at``
# is what read watermarks compare against: the delivery time, or when the user marked it unread
# again. ``joined`` is False on a row that started its display group (the group is that row
# alone: a page need not read its members), True on one that joined (or from before 0016). A
# joined base row keeps its group's summary (``group_count``, ``group_actors``; 0022)
# where delivery knew it; null: the page reads the group's members. ``type_id`` names the
# event's type in ``inbox_types`` (its category and section are there: 0033).
# the rows of PostgreSQL's partial index of unread base rows: those the unread count reads
UNREAD_IN_INBOX = f"bundle_base AND read_at IS NULL AND (flags & {HIDDEN}) = 0"

notifications = Table(
    "notifications",
    metadata,
    Column("user_id", String(USER), nullable=False),
    Column("event_id", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("fresh_at", BigInteger, nullable=False),
    Column("actor", String(USER)),
    Column("object", String(OBJECT)),
    Column("bundle_hash", Hash64, nullable=False),
    Column("display_hash", Hash64, nullable=False),
    Column("bundle_base", Boolean, nullable=False),
    Column("read_at", BigInteger),
    Column("joined", Boolean, nullable=False, server_default="1"),
    Column("group_count", Integer), Column("group_actors", Text),
    Column("type_id", SmallInteger, nullable=False),
    # the item's state as bits (tidings.domain.flags): reason, archived, saved, snoozed (0035)
    Column("flags", SmallInteger, nullable=False, server_default="0"),
    PrimaryKeyConstraint("user_id", "event_id"),
    Index(None, "user_id", "bundle_base", "created_at", "event_id"),
    # the unread count's rows: on PostgreSQL, a partial index of the unread base rows
    # (migration 0019); elsewhere the columns in full. A bundle's newest base is found through
    # ``inbox_open`` (0032), not an index of bundle hashes.
    # (0037: and only those in the inbox, neither archived nor snoozed: flags.HIDDEN, 132)
    Index(None, "user_id", "fresh_at", postgresql_where=text(UNREAD_IN_INBOX)
          ).ddl_if(dialect="postgresql"),
    # (with flags since 0037: the count reads the inbox's rows off the index alone)
    Index(None, "user_id", "bundle_base", "read_at", "fresh_at", "flags").ddl_if(dialect=NOT_PG),
    Index(None, "display_hash", "user_id", "created_at", "event_id", "actor"),  # 0021
    **MYSQL,
)

# Who received each event, a chunk of users per row (ESN's chunked fan-out): "who already has
# this event?" in fan-out, and retraction's users, where an (event, user) index on every
# notification cost about 41 B a notification on PostgreSQL (0031). ``users`` are the user ids
# one delivery wrote (at most ``core.recipients.PART``), sorted, newline-joined and compressed
# with zlib; ``chunk`` is a key unique within the event (the signed first 64 bits of the SHA-1
# of the chunk's first user id). Written in the same transaction as the rows, so a committed
# notification always has its record; a record may name users whose rows were removed since
# (the inbox cap, one recipient's deletion), so readers confirm by the rows' primary key.
# Retraction drops an event's records with its last rows, retention with the event.
deliveries = Table(
    "deliveries",
    metadata,
    Column("event_id", BigInteger, nullable=False),
    Column("chunk", BigInteger, nullable=False),
    Column("users", LargeBinary().with_variant(mysql.MEDIUMBLOB(), "mysql", "mariadb"),
           nullable=False),
    PrimaryKeyConstraint("event_id", "chunk"),
    **MYSQL,
)

# The queryable payload fields of delivered events (``tidings.domain.fields``), as text: one
# row per (event, field), written with the event's first notifications. An inbox list or count
# narrowed by a field probes it by primary key for each base row it reads.
event_fields = Table(
    "event_fields",
    metadata,
    Column("event_id", BigInteger, nullable=False),
    Column("name", String(64), nullable=False),
    Column("value", String(255), nullable=False),
    PrimaryKeyConstraint("event_id", "name"),
    **MYSQL,
)

# Per (user, bundle) with a base row: the position (``created_at``, ``event_id``) of its newest
# base, whose row fan-out reads by primary key (0032), in place of an index of bundle hashes.
# The row is also the lock that serialises the join-or-start decision: a unit locks the rows
# of its (user, bundle) pairs, in key order, before it reads those bases, so two units never
# both start a display group of one user's bundle. A pair with no base yet gets a row with no
# position (NULL) to lock; the unit that wrote no base for it deletes it again. Every write
# that changes a bundle's newest base moves the position in the same transaction: a new base
# row (a start or a join), a removal or trim (the next newest base, or no row). A demotion
# that no new base follows (``InboxStore.demote`` on its own) leaves it above every base of the
# bundle: a read that finds no base there reads the newest one below it. Types that never
# bundle (the bundle hash is the event's own) have no row.
inbox_open = Table(
    "inbox_open",
    metadata,
    Column("user_id", String(USER), nullable=False),
    Column("bundle_hash", Hash64, nullable=False),
    Column("created_at", BigInteger),
    Column("event_id", BigInteger),
    PrimaryKeyConstraint("user_id", "bundle_hash"),
    **MYSQL,
)

# When a snoozed display group returns to the inbox (tidings.domain.flags.SNOOZED on its rows):
# a row per snoozed group, sparse beside the rows (0037). Unsnoozing deletes it; the job that
# ends the snooze finds its time here, so a snooze moved or ended since leaves the job nothing.
inbox_snoozes = Table(
    "inbox_snoozes",
    metadata,
    Column("user_id", String(USER), nullable=False),
    Column("display_hash", Hash64, nullable=False),
    Column("until_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("user_id", "display_hash"),
    **MYSQL,
)

# The push model's mailboxes: a row per (follower, event), keyed in the timeline's order.
timelines = Table(
    "timelines",
    metadata,
    Column("user_id", String(USER), nullable=False),
    Column("event_id", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("user_id", "created_at", "event_id"),
    **MYSQL,
)

# Per mailbox: a bound of its entries (the cap's check) and its floor: entries at or below the
# position (``floor_at``, ``floor_id``) are not all held (trimmed, or older than a back-fill).
timeline_state = Table(
    "timeline_state",
    metadata,
    Column("user_id", String(USER), primary_key=True),
    Column("entries", BigInteger, nullable=False),
    Column("floor_id", BigInteger, nullable=False),
    Column("floor_at", BigInteger, nullable=False, server_default="0"),
    **MYSQL,
    **ROOM_TO_UPDATE,
)

# Per source (a followed actor): its follower count (hybrid's celebrity test), its model override,
# and ``push_from``: posts above the position (``push_from_at``, ``push_from``) are in the
# followers' mailboxes (NULL: pulled; 0: from the first post).
timeline_sources = Table(
    "timeline_sources",
    metadata,
    Column("actor", String(USER), primary_key=True),
    Column("followers", BigInteger, nullable=False),
    Column("model", String(8)), Column("push_from", BigInteger),
    Column("push_from_at", BigInteger),
    # the sources with an override: all a pull deployment's read needs of this table (partial on
    # PostgreSQL and SQLite, whole on MariaDB; 0014); those a push deployment's read needs (0023)
    Index(None, "actor", postgresql_where=text("model IS NOT NULL"),
          sqlite_where=text("model IS NOT NULL")),
    Index("ix_timeline_sources_actor_unpushed", "actor", postgresql_where=text(
        "model IS NOT NULL OR push_from IS NULL OR push_from <> 0")).ddl_if(dialect="postgresql"),
    **MYSQL,
)

# Gazelle witness rows: scope is 'all', 'seen', 'type:NAME', 'category:NAME', 'section:NAME' or
# 'position' (read up to a notification: also (position_at, position_id), the notification's
# (created_at, event_id); it covers rows at or below that position fresh at ``until_at``).
read_markers = Table(
    "read_markers",
    metadata,
    Column("user_id", String(USER), nullable=False),
    Column("scope", String(80), nullable=False),
    Column("until_at", BigInteger, nullable=False),
    Column("position_at", BigInteger),
    Column("position_id", BigInteger),
    PrimaryKeyConstraint("user_id", "scope"),
    **MYSQL,
)

# TheSchwartz's job table: a job is claimed by moving grabbed_until into the future.
jobs = Table(
    "jobs",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("func", String(64), nullable=False),
    Column("args", Text, nullable=False),
    Column("unique_key", String(255)),
    Column("priority", SmallInteger, nullable=False),
    Column("run_after", BigInteger, nullable=False),
    Column("grabbed_until", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    UniqueConstraint("unique_key"),
    Index(None, "priority", "run_after"),
    # SQLite would otherwise hand a completed job's id out again (0028)
    sqlite_autoincrement=True,
    **MYSQL,
)

job_failures = Table(
    "job_failures",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("job_id", BigInteger, nullable=False),
    Column("func", String(64), nullable=False),
    Column("args", Text, nullable=False),
    Column("error", Text, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("final", Boolean, nullable=False),
    Column("failed_at", BigInteger, nullable=False),
    Index(None, "failed_at"),
    **MYSQL,
)

# Mail waiting to be sent: one row per (user, event). ``kind`` is 'bundle' (inside an immediate
# bundling window) or 'digest' (daily / weekly, or immediate mail over the daily cap).
email_batch = Table(
    "email_batch",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("user_id", String(USER), nullable=False),
    Column("event_id", BigInteger, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("bundle_hash", Hash64, nullable=False),
    Column("priority", SmallInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    UniqueConstraint("user_id", "event_id"),
    Index(None, "user_id", "kind", "bundle_hash"),
    Index(None, "event_id"),
    **MYSQL,
)

# Echo's echo_email_bundle_status: when a bundle's last mail went out.
email_bundle_status = Table(
    "email_bundle_status",
    metadata,
    Column("user_id", String(USER), nullable=False),
    Column("bundle_hash", Hash64, nullable=False),
    Column("last_email_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("user_id", "bundle_hash"),
    **MYSQL,
)

# Every mail handed to the SMTP server, by its Message-ID (a repeat is recognisable).
email_log = Table(
    "email_log",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("message_id", String(255), nullable=False),
    Column("user_id", String(USER), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("address", String(255), nullable=False),
    Column("subject", String(255), nullable=False),
    Column("sent_at", BigInteger, nullable=False),
    Index(None, "user_id", "sent_at"),
    Index(None, "message_id"),
    **MYSQL,
)

email_bounces = Table(
    "email_bounces",
    metadata,
    Column("address", String(255), primary_key=True),
    Column("reason", String(255), nullable=False),
    Column("bounced_at", BigInteger, nullable=False),
    **MYSQL,
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", Serial, primary_key=True, autoincrement=True),
    Column("user_id", String(USER), nullable=False),
    Column("event_id", BigInteger, nullable=False),
    Column("url", String(1024), nullable=False),
    Column("status", Integer),
    Column("attempt", Integer, nullable=False),
    Column("error", String(1024)),
    Column("at", BigInteger, nullable=False),
    Index(None, "user_id", "at"),
    **MYSQL,
)

# One row per webhook endpoint (host) with consecutive failures: the circuit breaker every
# worker shares. A row goes when the endpoint answers again.
webhook_endpoints = Table(
    "webhook_endpoints",
    metadata,
    Column("host", String(255), primary_key=True),
    Column("failures", Integer, nullable=False),
    Column("paused_until", BigInteger, nullable=False),
    **MYSQL,
)

