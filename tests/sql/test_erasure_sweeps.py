"""An erasure's sweeps of the records that name a person among others, on every SQL backend
(their patterns, blobs and keys are the dialects'): the packed delivery records rewritten
under the key of their new first user (merged into one there already, deleted once empty),
queued jobs and failure records rewritten or dropped, and an id with a LIKE wildcard
(``_``) matching itself only."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert

from engines import enqueue, open_tidings, table_rows
from tidings.jobs.model import Job, JobSpec
from tidings.store.sql.core import recipients
from tidings.store.sql.schema import deliveries


def _records(*parts: tuple[int, list[str]]) -> list[dict[str, Any]]:
    return [{"event_id": event, "chunk": recipients.chunk_key(users[0]),
             "users": recipients.encode(users)} for event, users in parts]


def test_the_sweeps_take_a_user_out_of_records_jobs_and_failures(store_url: str) -> None:
    with open_tidings(store_url) as t:
        t.store.db.transact(lambda conn: conn.execute(insert(deliveries), _records(
            (1, ["bob", "dave"]), (1, ["dave", "erin"]),  # bob's goes: dave's key, merged
            (2, ["bob"]), (3, ["al", "bob", "cy"]), (4, ["bobby"]))))
        enqueue(t, JobSpec("fanout_chunk", {"event_id": 5, "source": "followers",
                                            "after": "bob", "upto": "cy"},
                           unique_key="fanout:5:followers:bob"),
                JobSpec("fanout_chunk", {"event_id": 6, "source": "users",
                                         "users": ["b_b", "bob"]}, unique_key="fanout:6:users"),
                JobSpec("trim_inbox", {"user": "bob"}, unique_key="trim:bob"),
                JobSpec("trim_inbox", {"user": "bobby"}, unique_key="trim:bobby"))
        failed = Job(id=99, func="email_send", args={"user": "cy", "cc": ["bob"]},
                     unique_key=None, priority=5, attempts=1, token=0)
        t.store.transact(lambda tx: tx.jobs.record_failure(
            failed, "no route to bob's server", final=False, now=1))

        changed = t.store.transact(lambda tx: tx.erasure.unlist("bob"))
        assert changed == {"delivery_record": 3, "job": 3, "job_failure": 1}
        held = {(r["event_id"], r["chunk"]): recipients.decode(r["users"])
                for r in table_rows(t, "deliveries")}
        assert held == {(1, recipients.chunk_key("dave")): ["dave", "erin"],
                        (3, recipients.chunk_key("al")): ["al", "cy"],
                        (4, recipients.chunk_key("bobby")): ["bobby"]}
        jobs = {r["unique_key"]: r["args"] for r in table_rows(t, "jobs")}
        assert jobs == {
            "fanout:5:followers:boa~": '{"event_id":5,"source":"followers","after":"boa~",'
                                       '"upto":"cy"}',
            "fanout:6:users": '{"event_id":6,"source":"users","users":["b_b"]}',
            "trim:bobby": '{"user":"bobby"}'}
        (failure,) = table_rows(t, "job_failures")
        assert (failure["args"], failure["error"]) == (
            '{"user":"cy","cc":[]}', "no route to [erased]'s server")
        # again: nothing; and b_b (a LIKE wildcard in the id) matches b_b alone
        assert t.store.transact(lambda tx: tx.erasure.unlist("bob")) == {}
        assert t.store.transact(lambda tx: tx.erasure.unlist("b_b")) == {"job": 1}
        assert "b_b" not in str(table_rows(t, "jobs"))
