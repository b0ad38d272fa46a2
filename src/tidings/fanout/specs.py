"""The job specs of fan-out and maintenance, built in one place for every caller."""

from __future__ import annotations

import hashlib
from typing import Any

from tidings.jobs.model import EventJob, JobSpec

FANOUT = "fanout"
FANOUT_CHUNK = "fanout_chunk"
TRIM = "trim_inbox"
RETENTION = "retention"
UNSNOOZE = "unsnooze"


def fanout_job(priority: int = 5, at: int | None = None) -> EventJob:
    """The job that will fan out an event about to be stored. ``at`` dates a back-filled
    event's notifications in the past; live ones are dated at delivery, so they always land
    on top of an inbox."""
    return EventJob(FANOUT, {"at": at} if at is not None else {}, key_prefix="fanout:",
                    priority=priority)


def fanout_spec(event_id: int, priority: int = 5, at: int | None = None) -> JobSpec:
    """The job that fans a stored event out (see :func:`fanout_job`)."""
    return fanout_job(priority, at).for_event(event_id)


def chunk_spec(args: dict[str, Any], event_id: int, source: str, after: str,
               upto: str | None, priority: int) -> JobSpec:
    """One chunk of a source: users in (after, upto]."""
    return JobSpec(FANOUT_CHUNK, {**args, "source": source, "after": after, "upto": upto},
                   unique_key=f"fanout:{event_id}:{source}:{after}"[:255], priority=priority)


def users_spec(args: dict[str, Any], event_id: int, users: list[str], priority: int,
               part: int = 0) -> JobSpec:
    """Part ``part`` of the explicit recipients of a chunked event (≤ chunk size users)."""
    suffix = f":{part}" if part else ""
    return JobSpec(FANOUT_CHUNK, {**args, "source": "users", "users": users},
                   unique_key=f"fanout:{event_id}:users{suffix}", priority=priority)


def away_spec(args: dict[str, Any], event_id: int, users: list[str], timeline: list[str],
              priority: int, retry: int, run_after: int, holders: list[str] | None = None
              ) -> JobSpec:
    """The users of a chunk whose inboxes were on a server away (a stopped cluster node),
    delivered by a job of their own from ``run_after`` (``retry``: how many times so far);
    ``timeline``: those of them whose timelines the event joins; ``holders``: users already
    delivered to while the event's index of holders was on a server away, for the job to
    name in that index (or, the event retracted or gone meanwhile, to remove their rows).
    Keyed by the users and holders, so the same split made twice queues one job."""
    named = "\n".join(users) + ("\n|\n" + "\n".join(holders) if holders else "")
    digest = hashlib.sha1(named.encode()).hexdigest()[:20]
    return JobSpec(FANOUT_CHUNK, {**args, "source": "users", "users": users,
                                  "timeline": timeline, "retry": retry,
                                  "holders": holders or []},
                   unique_key=f"fanout:{event_id}:away:{digest}", priority=priority,
                   run_after=run_after)


def trim_spec(user: str) -> JobSpec:
    return JobSpec(TRIM, {"user": user}, unique_key=f"trim:{user}", priority=9)


def retention_spec(run_after: int | None = None, *, after: int = 0) -> JobSpec:
    """The retention sweep; ``after``: the event id a sweep in parts goes on above."""
    return JobSpec(RETENTION, {"after": after} if after else {}, unique_key="retention",
                   priority=10, run_after=run_after)


def unsnooze_spec(user: str, group: str, until: int) -> JobSpec:
    """The job that puts a snoozed display group back in its user's inbox, unread, at
    ``until`` (µs); it does nothing if the group was unsnoozed or snoozed again since."""
    return JobSpec(UNSNOOZE, {"user": user, "group": group, "until": until},
                   unique_key=f"unsnooze:{group}:{until}:{user}"[:255], priority=4,
                   run_after=until)
