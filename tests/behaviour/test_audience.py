"""Who hears of an event: recipients, subscribers and followers as the type says, minus the actor,
mutes and the event's exclude list; the chunked fan-out; subscriptions and follows themselves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engines import jobs_by_func, keys_of, notification_rows, open_tidings, recipients_of
from tidings.engine import Follow, Tidings
from tidings.exceptions import InvalidInput, NotFound
from tidings.jobs.model import JobSpec


@pytest.fixture
def t(any_store_url: str) -> Iterator[Tidings]:
    with open_tidings(any_store_url) as tidings:
        yield tidings


def _users(t: Tidings, page_items: list[Follow]) -> list[str]:
    return [f.user for f in page_items]


# -- sources ----------------------------------------------------------------------------------

def test_subscribers_match_type_or_star_and_object_or_star(t: Tidings) -> None:
    t.subscribe("bob", "edit", "page:Rome")
    t.subscribe("carol", "*", "page:Rome")
    t.subscribe("dave", "edit", "*")
    t.subscribe("erin", "*", "*")
    t.subscribe("frank", "message", "page:Rome")  # another type
    t.subscribe("gina", "edit", "page:Paris")  # another object
    t.subscribe("hal", "page-linked", "*")

    event = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome"})
    t.run_jobs()

    assert recipients_of(t, event.id) == ["bob", "carol", "dave", "erin"]


def test_an_event_without_object_reaches_only_object_wildcard_subscribers(t: Tidings) -> None:
    t.subscribe("bob", "edit", "page:Rome")
    t.subscribe("dave", "edit", "*")

    event = t.publish({"type": "edit", "actor": "alice"})
    t.run_jobs()

    assert recipients_of(t, event.id) == ["dave"]


def test_followers_hear_of_types_whose_audience_names_them(t: Tidings) -> None:
    t.follow("bob", "alice")
    t.follow("carol", "alice")
    t.follow("dave", "zoe")
    t.subscribe("erin", "*", "*")

    post = t.publish({"type": "post", "actor": "alice", "object": "blog:1",
                      "recipients": ["frank"]})  # post's audience is followers only
    edit = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome",
                      "recipients": ["frank"]})
    mention = t.publish({"type": "mention", "actor": "alice", "object": "page:Rome",
                         "recipients": ["frank"]})  # recipients only
    t.run_jobs()

    assert recipients_of(t, post.id) == ["bob", "carol"]
    assert recipients_of(t, edit.id) == ["bob", "carol", "erin", "frank"]
    assert recipients_of(t, mention.id) == ["frank"]


def test_the_actor_is_never_told_of_their_own_act(t: Tidings) -> None:
    t.subscribe("alice", "*", "*")
    t.follow("bob", "alice")

    event = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome",
                       "recipients": ["alice", "bob"]})
    t.run_jobs()

    assert recipients_of(t, event.id) == ["bob"]


def test_mutes_of_actors_and_objects_are_respected(t: Tidings) -> None:
    for user in ("bob", "carol", "dave", "erin"):
        t.subscribe(user, "*", "*")
    t.mute("bob", actor="alice")
    t.mute("carol", object="page:Rome")
    t.mute("dave", actor="zoe", object="page:Paris")

    rome = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome",
                      "recipients": ["bob", "carol"]})  # a mute beats an explicit recipient too
    paris = t.publish({"type": "edit", "actor": "zoe", "object": "page:Paris"})
    t.run_jobs()

    assert recipients_of(t, rome.id) == ["dave", "erin"]
    assert recipients_of(t, paris.id) == ["bob", "carol", "erin"]
    assert t.muted("dave") == {"actors": ["zoe"], "objects": ["page:Paris"]}
    assert t.muted("erin") == {"actors": [], "objects": []}


def test_unmute_lets_later_events_through(t: Tidings) -> None:
    t.subscribe("bob", "*", "*")
    t.mute("bob", actor="alice", object="page:Rome")
    t.unmute("bob", actor="alice")
    assert t.muted("bob") == {"actors": [], "objects": ["page:Rome"]}
    t.unmute("bob", object="page:Rome")

    event = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome"})
    t.run_jobs()

    assert recipients_of(t, event.id) == ["bob"]


def test_the_events_exclude_list_removes_users_from_every_source(t: Tidings) -> None:
    t.subscribe("bob", "*", "*")
    t.follow("carol", "alice")
    t.follow("dave", "alice")

    event = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome",
                       "recipients": ["erin", "frank"], "exclude": ["bob", "carol", "erin"]})
    t.run_jobs()

    assert recipients_of(t, event.id) == ["dave", "frank"]


def test_a_user_in_several_sources_is_told_once(t: Tidings) -> None:
    t.subscribe("bob", "edit", "page:Rome")
    t.subscribe("bob", "*", "*")
    t.follow("bob", "alice")

    event = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome",
                       "recipients": ["bob", "bob"]})
    t.run_jobs()

    assert recipients_of(t, event.id) == ["bob"]
    assert t.counters.delivered == 1


# -- the chunked path -------------------------------------------------------------------------

def _big_audience(t: Tidings) -> None:
    """Nine subscribers (some twice), seven followers, overlapping; mutes and the actor."""
    t.subscribe("alice", "*", "*")
    for i, (type_, obj) in enumerate([("edit", "page:Rome"), ("*", "page:Rome"),
                                      ("edit", "*"), ("*", "*")] * 2, start=1):
        t.subscribe(f"u{i:02d}", type_, obj)
    t.subscribe("u02", "*", "*")
    t.subscribe("u13", "message", "page:Rome")
    for i in range(5, 12):
        t.follow(f"u{i:02d}", "alice")
    t.mute("u04", actor="alice")
    t.mute("u09", object="page:Rome")


EXPECTED = ["u01", "u02", "u03", "u05", "u06", "u08", "u10", "u11", "u12"]
BIG_EVENT = {"type": "edit", "actor": "alice", "object": "page:Rome",
             "recipients": ["u03", "u10", "u12", "alice"], "exclude": ["u07"]}


def test_the_fast_path_delivers_in_the_fanout_job_itself(t: Tidings) -> None:
    _big_audience(t)

    event = t.publish(BIG_EVENT)
    t.worker().run_once()  # the fan-out job alone

    assert recipients_of(t, event.id) == EXPECTED
    assert "fanout_chunk" not in jobs_by_func(t)
    assert t.counters.delivered == len(EXPECTED)


def test_the_chunked_path_gives_the_same_audience_once_each(any_store_url: str) -> None:
    with open_tidings(any_store_url, chunk_size=3) as t:
        _big_audience(t)
        event = t.publish(BIG_EVENT)

        t.worker().run_once()  # the fan-out job: replaced by chunk jobs, delivers nothing itself
        queued = jobs_by_func(t)
        assert set(queued) == {"fanout_chunk"}
        assert queued["fanout_chunk"] >= 5  # subscribers and followers each need several
        assert keys_of(t) == []

        t.run_jobs()

        assert recipients_of(t, event.id) == EXPECTED
        assert t.counters.delivered == len(EXPECTED)
        assert t.queue.stats()["queued"] == 0


def test_chunked_and_fast_paths_agree_on_the_same_store(any_store_url: str) -> None:
    with (open_tidings(any_store_url) as fast,
          open_tidings(any_store_url, chunk_size=2) as chunked):
        _big_audience(fast)
        one = fast.publish(BIG_EVENT)
        fast.run_jobs()
        two = chunked.publish(BIG_EVENT)
        chunked.run_jobs()

        assert recipients_of(fast, one.id) == EXPECTED
        assert recipients_of(chunked, two.id) == EXPECTED


# -- one notification per (user, event) -------------------------------------------------------

@pytest.mark.parametrize("chunk_size", [5000, 3])
def test_running_a_fanout_twice_writes_nothing_twice(any_store_url: str,
                                                     chunk_size: int) -> None:
    """On every store, the hot stores on SQLite too: a completed job's id is never handed
    out again (0028), so the second job cannot take the first one's writes for its own."""
    with open_tidings(any_store_url, chunk_size=chunk_size) as t:
        _big_audience(t)
        event = t.publish(BIG_EVENT)
        linked = t.publish({"type": "page-linked", "actor": "zoe", "object": "page:Rome",
                            "recipients": ["u01", "u12"]})
        t.run_jobs()
        before = notification_rows(t)
        delivered = t.counters.delivered

        # The same job arguments again, under unique keys the queue has not seen.
        t.store.transact(lambda tx: tx.jobs.enqueue_many([
            JobSpec("fanout", {"event_id": int(event.id)}, unique_key="again:1"),
            JobSpec("fanout", {"event_id": int(linked.id)}, unique_key="again:2"),
        ]))
        t.run_jobs()

        assert notification_rows(t) == before
        assert t.counters.delivered == delivered
        assert recipients_of(t, event.id) == EXPECTED


# -- subscriptions and follows ----------------------------------------------------------------

def test_subscriptions_are_added_listed_by_page_and_removed(t: Tidings) -> None:
    first = t.subscribe("bob", "edit", "page:Rome", channels=["web", "email"])
    again = t.subscribe("bob", "edit", "page:Rome", channels=["web"])  # same key: updated
    second = t.subscribe("bob", "*", "page:Paris")
    third = t.subscribe("bob", "message", "*")
    t.subscribe("carol", "*", "*")

    assert again.id == first.id
    assert again.channels == ("web",)
    assert (second.type, second.object) == ("*", "page:Paris")
    page1 = t.subscriptions("bob", limit=2)
    assert [s.id for s in page1.items] == [first.id, second.id]
    assert page1.next_cursor is not None
    page2 = t.subscriptions("bob", limit=2, cursor=page1.next_cursor)
    assert [(s.id, s.user, s.type, s.object) for s in page2.items] == [
        (third.id, "bob", "message", "*")]
    assert page2.next_cursor is None

    t.unsubscribe("bob", second.id)
    assert [s.id for s in t.subscriptions("bob").items] == [first.id, third.id]
    with pytest.raises(NotFound):
        t.unsubscribe("bob", second.id)
    with pytest.raises(NotFound):
        t.unsubscribe("carol", first.id)  # not carol's


def test_an_unsubscribed_user_hears_no_more(t: Tidings) -> None:
    sub = t.subscribe("bob", "edit", "page:Rome")
    t.unsubscribe("bob", sub.id)

    event = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome"})
    t.run_jobs()

    assert recipients_of(t, event.id) == []


def test_follows_are_added_listed_by_page_and_removed(t: Tidings) -> None:
    assert t.follow("bob", "dave") is True
    assert t.follow("bob", "alice") is True
    assert t.follow("bob", "carol") is True
    assert t.follow("bob", "alice") is False
    assert t.follow("erin", "alice") is True

    page1 = t.following("bob", limit=2)
    assert _users(t, page1.items) == ["alice", "carol"]
    assert page1.next_cursor is not None
    page2 = t.following("bob", limit=2, cursor=page1.next_cursor)
    assert _users(t, page2.items) == ["dave"]
    assert page2.next_cursor is None
    assert _users(t, t.followers("alice").items) == ["bob", "erin"]
    assert _users(t, t.followers("bob").items) == []

    assert t.unfollow("bob", "alice") is True
    assert t.unfollow("bob", "alice") is False
    assert _users(t, t.followers("alice").items) == ["erin"]
    assert _users(t, t.following("bob").items) == ["carol", "dave"]


def test_an_unfollowed_actor_is_heard_no_more(t: Tidings) -> None:
    t.follow("bob", "alice")
    t.follow("carol", "alice")
    t.unfollow("bob", "alice")

    event = t.publish({"type": "post", "actor": "alice", "object": "blog:1"})
    t.run_jobs()

    assert recipients_of(t, event.id) == ["carol"]


# -- the chunk size bounds every job (issue 13, item 6) ----------------------------------------

def test_no_job_delivers_more_than_the_chunk_size_in_all(any_store_url: str) -> None:
    """Every source fits a chunk on its own (4 recipients, 3 subscribers, 3 followers), but
    not together: the fan-out job must not take the fast path, and no job may deliver more
    than ``chunk_size`` users."""
    with open_tidings(any_store_url, chunk_size=3) as t:
        for user in ("s1", "s2", "s3"):
            t.subscribe(user, "edit", "page:Rome")
        for user in ("f1", "f2", "f3"):
            t.follow(user, "alice")
        event = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome",
                           "recipients": ["r1", "r2", "r3", "r4"]})

        worker = t.worker()  # one job per run_once
        per_job: list[int] = []
        while True:
            before = t.counters.delivered
            if worker.run_once() == 0:
                break
            per_job.append(t.counters.delivered - before)

        assert per_job[0] == 0  # the fan-out job itself was replaced by chunk jobs
        assert max(per_job) <= 3
        assert sum(per_job) == 10
        assert recipients_of(t, event.id) == ["f1", "f2", "f3", "r1", "r2", "r3", "r4",
                                              "s1", "s2", "s3"]


def test_a_follower_gets_the_timeline_entry_when_another_source_is_chunked(
        any_store_url: str) -> None:
    with open_tidings(any_store_url, chunk_size=3) as t:
        for user in ("bob", "s1", "s2", "s3", "s4"):  # five subscribers: chunked
            t.subscribe(user, "edit", "page:Rome")
        t.follow("bob", "alice")  # one follower: a small source
        t.follow("carol", "alice")
        event = t.publish({"type": "edit", "actor": "alice", "object": "page:Rome"})
        t.run_jobs()

        assert recipients_of(t, event.id) == ["bob", "carol", "s1", "s2", "s3", "s4"]
        for follower in ("bob", "carol"):
            assert [str(item.id) for item in t.timeline(follower).items] == [str(event.id)]
        assert t.timeline("s1").items == []


def test_a_subscription_to_a_type_that_reaches_no_subscribers_is_refused(t: Tidings) -> None:
    """``mention`` reaches its recipients only: a subscription to it could never match, so it
    is refused with a message that says why, rather than stored in silence."""
    with pytest.raises(InvalidInput, match=r"'mention'.*object_subscribers") as refused:
        t.subscribe("bob", "mention", "page:Rome")
    assert refused.value.field == "type"
    with pytest.raises(InvalidInput, match="'post'"):
        t.subscribe("bob", "post", "*")  # followers only
    assert t.subscriptions("bob").items == []
    assert t.subscribe("bob", "*", "page:Rome").type == "*"  # any type: some do reach them
