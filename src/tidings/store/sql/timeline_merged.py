"""A timeline read's whole step in one PostgreSQL statement (``TimelineStore.merged``).

The mailbox page above its floor, the reader's followees with each one's cut decided in SQL
(:func:`tidings.domain.timeline.decide` and :func:`~tidings.domain.timeline.pull_cut`, from
``timeline_sources`` and the deployment's model and threshold passed as parameters), their
newest events up to it (``LATERAL``, through the partial index ``ix_events_actor_id`` on
(actor, id) of unretracted events, ``type`` included: an index-only scan, no heap page read
for the rows that do not make the page), merged by id with the mailbox copy winning, limited,
and only then joined to ``events`` for the page's own rows; the reader's mutes ride along in
the last column. One round trip, prepared by psycopg, where the steps took two or three.

A followee's pull is skipped outright when the mailbox alone fills the page above its cut
(a pushed source), and no followee's pull goes below the mailbox page's last id then.

In the first pass, a followee pulled whole (no cut) is read with no lower or upper bound on
``id`` when the read has none to apply (the mailbox page is not full, no ``:above``): each
bound on the index's second column costs about a microsecond a descent, a fifth of one, even
where it excludes nothing. The followees with and without bounds are two branches of a
``UNION ALL``, each followee in exactly one of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import TextClause, text

from tidings.domain.timeline import NO_BOUND, Candidate, ReadPlan
from tidings.domain.views import TimelineEntry

# each followee and its cut, as decide() and pull_cut() give them for the state stored
SOURCES = f"""
  SELECT f.followee AS actor,
    CASE WHEN (CASE WHEN s.model IN ('push', 'pull') THEN s.model
                    WHEN CAST(:model AS TEXT) = 'hybrid' THEN
                      CASE WHEN s.followers > CAST(:celebrity AS BIGINT) THEN 'pull'
                           ELSE 'push' END
                    WHEN CAST(:model AS TEXT) = 'pull' THEN 'pull'
                    ELSE 'push' END) = 'pull'
              OR (s.actor IS NOT NULL AND s.push_from IS NULL)
         THEN {NO_BOUND}
         ELSE greatest(coalesce(s.push_from, 0), (SELECT floor FROM fl)) END AS cut
  FROM follows f
  LEFT JOIN LATERAL (SELECT actor, followers, model, push_from FROM timeline_sources
                     WHERE actor = f.followee LIMIT 1) s ON true
  WHERE f.follower = :user"""
# the same where the deployment is pull: a source is pulled whole unless overridden to push
# (and pushed since): only the overrides are looked up, in their own small index, joined to
# the followees as a set (a merge of two index scans where the overrides are few) rather than
# probed once per followee. (The push/hybrid form above keeps its probe per followee: there
# every source has a row, and a join would read them all.)
PULLED = f"""
  SELECT f.followee AS actor,
    CASE WHEN o.model = 'push' AND o.push_from IS NOT NULL
         THEN greatest(o.push_from, (SELECT floor FROM fl))
         ELSE {NO_BOUND} END AS cut
  FROM follows f
  LEFT JOIN timeline_sources o ON o.actor = f.followee AND o.model IS NOT NULL
  WHERE f.follower = :user"""

# A source whose stored state a push deployment cannot take as pushed from the start: an
# override, pulled when its last post was fanned out (``push_from`` NULL), or pushed only since
# some event (``push_from`` > 0). The partial index ix_timeline_sources_actor_unpushed
# (PostgreSQL, migration 0023) holds exactly these.
UNPUSHED = "(o.model IS NOT NULL OR o.push_from IS NULL OR o.push_from <> 0)"
# the same where the deployment is push: every other followee's posts are in the mailbox
# above its floor, so its cut is the floor (pull_cut). Only the sources of UNPUSHED are looked
# up, in their own small index, as a set; the others are listed — each with the floor as its
# cut — only when the read reaches below the floor (the mailbox page is not full above it),
# the only time their cut matters. A pushed reader's first page then reads no source state:
# before, one probe of timeline_sources per followee.
PUSHED = f"""
  SELECT f.followee AS actor,
    CASE WHEN o.model = 'pull' OR o.push_from IS NULL THEN {NO_BOUND}
         ELSE greatest(o.push_from, (SELECT floor FROM fl)) END AS cut
  FROM follows f
  JOIN timeline_sources o ON o.actor = f.followee AND {UNPUSHED}
  WHERE f.follower = :user
  UNION ALL
  SELECT f.followee, (SELECT floor FROM fl) FROM follows f
  WHERE f.follower = :user AND (SELECT floor FROM fl) > (SELECT id FROM low)
    AND NOT EXISTS (SELECT 1 FROM timeline_sources o WHERE o.actor = f.followee
                    AND {UNPUSHED})"""
FORMS = {"sources": SOURCES, "pulled": PULLED, "pushed": PUSHED}


@lru_cache(maxsize=64)
def statement(below: bool, above: bool, limit: int, form: str = "sources") -> TextClause:
    """``:user``, ``:model`` / ``:celebrity`` (the deployment's; the ``pulled`` and
    ``pushed`` forms, for a pull or a push deployment, ignore them), ``:types``
    (:func:`array_text`), ``:below`` / ``:above``; one row per event of the page, newest
    first."""
    n = int(limit)
    under = " AND {col} < CAST(:below AS BIGINT)" if below else ""
    over = "greatest((SELECT floor FROM fl), CAST(:above AS BIGINT))" if above else (
        "(SELECT floor FROM fl)")
    least = "CAST(:above AS BIGINT)" if above else "0"
    return text(f"""
WITH fl AS (
  SELECT coalesce(max(floor_id), 0) AS floor FROM timeline_state WHERE user_id = :user),
box AS (
  SELECT t.event_id AS id FROM timelines t JOIN events b ON b.id = t.event_id
  WHERE t.user_id = :user AND b.retracted_at IS NULL
    AND t.event_id > {over}{under.format(col="t.event_id")}
  ORDER BY t.event_id DESC LIMIT {n}),
low AS (
  SELECT CASE WHEN count(*) = {n} THEN min(id) ELSE {least} END AS id FROM box),
src AS ({FORMS[form]}),
newest AS (
  SELECT src.actor, src.cut, p.id FROM src CROSS JOIN LATERAL (
    SELECT e.id FROM events e
    WHERE e.actor = src.actor
      AND e.retracted_at IS NULL AND e.type = ANY(CAST(:types AS VARCHAR[])){
        under.format(col="e.id")}
    ORDER BY e.id DESC LIMIT 1) p
  WHERE src.cut = {NO_BOUND} AND (SELECT id FROM low) = 0
  UNION ALL
  SELECT src.actor, src.cut, p.id FROM src CROSS JOIN LATERAL (
    SELECT e.id FROM events e
    WHERE e.actor = src.actor AND e.id <= src.cut AND e.id > (SELECT id FROM low)
      AND e.retracted_at IS NULL AND e.type = ANY(CAST(:types AS VARCHAR[])){
        under.format(col="e.id")}
    ORDER BY e.id DESC LIMIT 1) p
  WHERE src.cut > (SELECT id FROM low)
    AND (src.cut <> {NO_BOUND} OR (SELECT id FROM low) <> 0)),
bound AS (
  SELECT coalesce((SELECT id FROM newest ORDER BY id DESC OFFSET {n - 1} LIMIT 1),
                  (SELECT id FROM low) + 1) AS id),
pulled AS (
  SELECT p.id FROM newest CROSS JOIN LATERAL (
    SELECT e.id FROM events e
    WHERE e.actor = newest.actor AND e.id <= newest.id AND e.id >= (SELECT id FROM bound)
      AND e.retracted_at IS NULL AND e.type = ANY(CAST(:types AS VARCHAR[]))
    ORDER BY e.id DESC LIMIT {n}) p
  WHERE newest.id >= (SELECT id FROM bound)
  ORDER BY p.id DESC LIMIT {n}),
page AS (
  SELECT id, min(pulled) AS pulled
  FROM (SELECT id, 0 AS pulled FROM box UNION ALL SELECT id, 1 FROM pulled) c
  GROUP BY id ORDER BY id DESC LIMIT {n})
SELECT e.id, e.type, e.actor, e.object, e.payload, e.created_at, page.pulled,
  CASE WHEN page.pulled = 1 AND e.exclude <> '[]' THEN e.exclude END,
  (SELECT json_agg(json_build_array(m.kind, m.value))::text FROM mutes m
   WHERE m.user_id = :user)
FROM page JOIN events e ON e.id = page.id
ORDER BY e.id DESC""")


@lru_cache(maxsize=16)
def array_text(values: tuple[str, ...]) -> str:
    """``values`` as the text of a PostgreSQL array (each element quoted), which the server
    reads into the ``VARCHAR[]`` the statement casts it to: the driver sends text as it is,
    where a list is adapted element by element on every call (about 20 µs a read)."""
    quoted = ('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "{" + ",".join(quoted) + "}"


def params(user: str, plan: ReadPlan, below: int | None, above: int | None
           ) -> dict[str, Any]:
    values: dict[str, Any] = {"user": user, "model": plan.model,
                              "celebrity": plan.celebrity, "types": array_text(plan.types)}
    if below is not None:
        values["below"] = below
    if above is not None:
        values["above"] = above
    return values


# the C scanner json.loads ends in, without loads' and raw_decode's Python around it (their
# checks for surrounding whitespace, which text tidings wrote has none of): ~0.4 µs a row
_scan: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]  # set in __init__, not stubbed


def _object(text: str) -> Any:
    """``json.loads(text)``, the same result or error, faster for JSON text as tidings
    writes it (a payload): the scanner alone, ``json.loads`` for anything else."""
    try:
        found, end = _scan(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    return found if end == len(text) else json.loads(text)


def candidates(rows: Sequence[Sequence[Any]]
               ) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """The statement's rows as candidates, and the mutes of the last column."""
    out = [Candidate(TimelineEntry(id_, type_, actor, object_, _object(payload), created_at),
                     pulled == 1, tuple(json.loads(exclude)) if exclude else ())
           for id_, type_, actor, object_, payload, created_at, pulled, exclude, _ in rows]
    mutes = json.loads(rows[0][-1]) if rows and rows[0][-1] else []
    return out, [(kind, value) for kind, value in mutes]
