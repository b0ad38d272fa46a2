"""The library bounds payloads as the HTTP door does: depth and key count give a clear
InvalidInput, never a RecursionError, and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest

from tidings.engine import Tidings
from tidings.exceptions import InvalidInput


def _nested(levels: int) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    for _ in range(levels - 1):
        payload = {"a": payload}
    return payload


@pytest.mark.parametrize("levels", [33, 300, 5000])
def test_a_deep_payload_is_refused_with_a_clear_error(t: Tidings, levels: int) -> None:
    with pytest.raises(InvalidInput, match="levels deep") as refused:
        t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
                   "payload": _nested(levels)})
    assert refused.value.field == "payload"
    assert t.queue.stats()["queued"] == 0


def test_too_many_keys_are_refused(t: Tidings) -> None:
    payload = {"items": [{f"k{i}": i} for i in range(1001)]}
    with pytest.raises(InvalidInput, match="keys"):
        t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
                   "payload": payload})


def test_payloads_at_the_limits_are_accepted(t: Tidings) -> None:
    t.publish({"type": "mention", "actor": "alice", "recipients": ["bob"],
               "payload": _nested(32)})
    t.publish({"type": "mention", "actor": "alice", "recipients": ["carol"],
               "payload": {f"k{i}": i for i in range(1000)}})
    t.run_jobs()
    assert t.unread_count("bob").count == 1 and t.unread_count("carol").count == 1
