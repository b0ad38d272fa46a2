"""The rules an erasure applies to the records that name a person among others
(:mod:`tidings.domain.erasure`): a bound of a range of ids, a job's arguments and key, a
message."""

from __future__ import annotations

import pytest

from tidings.domain.erasure import below, scrub_args, scrub_key, scrub_text

IDS = ["A", "a", "bo", "boa", "boa.z", "boaz", "boa_", "bob", "bob-1", "bob.x", "boba", "bobby",
       "boc", "z", "0", "9:x", "@", "-"]


@pytest.mark.parametrize("user", ["bob", "A", "0", "a-", "x:y", "@"])
def test_the_bound_below_a_user_cuts_every_other_id_where_they_did(user: str) -> None:
    bound = below(user)
    for other in (i for i in IDS if i != user):
        assert (other < bound) == (other < user), (other, bound)
    assert bound < user


def test_a_job_about_the_user_goes_and_others_lose_them() -> None:
    assert scrub_args({"user": "bob", "event_id": 3}, "bob") is None
    assert scrub_args({"source": "users", "users": ["bob"]}, "bob") is None
    assert scrub_args({"users": ["al", "bob"], "holders": ["bob"], "timeline": ["bob", "cy"],
                       "event_id": 3}, "bob") == {
        "users": ["al"], "holders": [], "timeline": ["cy"], "event_id": 3}
    chunk = scrub_args({"source": "followers", "after": "bob", "upto": "bob", "event_id": 5},
                       "bob")
    assert chunk == {"source": "followers", "after": "boa~", "upto": "boa~", "event_id": 5}
    assert scrub_key("fanout:5:followers:bob", chunk, "bob") == "fanout:5:followers:boa~"
    assert scrub_key("fanout:5:users", {"users": ["al"]}, "bob") == "fanout:5:users"
    digest = scrub_key("away:bob:1", {"users": ["al"]}, "bob")
    assert digest is not None and digest.startswith("erased:") and "bob" not in digest
    assert scrub_args({"user": "bobby", "users": ["bobby"]}, "bob") == {
        "user": "bobby", "users": ["bobby"]}


def test_a_message_loses_the_id_where_it_stands_alone() -> None:
    assert scrub_text("delivery to bob failed; bobby and bob.x fine, 'bob'", "bob") == (
        "delivery to [erased] failed; bobby and bob.x fine, '[erased]'")
