"""Rendering as the engine uses it: a failing template never breaks an inbox read, the failure
is logged with the event's id, and a type stored before templates were checked does not break
reading the others."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from engines import open_tidings
from tidings.domain.rendering import clear_render_cache
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings

BROKEN = EventType(name="broken", audience=("recipients",),
                   templates=Templates(title="{{ payload.n + 1 }}"))


@pytest.fixture
def t(any_store_url: str) -> Iterator[Tidings]:
    clear_render_cache()  # the same render on another store would be a cache hit, not logged
    with open_tidings(any_store_url, types=(BROKEN,)) as tidings:
        tidings.define_type(BROKEN)
        yield tidings


def test_a_failing_title_reads_as_the_default(t: Tidings) -> None:
    t.publish({"type": "broken", "actor": "alice", "object": "page:Fog", "recipients": ["bob"],
               "payload": {"n": "three"}})
    t.run_jobs()

    (item,) = t.notifications("bob").items
    assert (item.title, item.html) == ("alice did broken on Fog", "alice did broken on Fog")


def test_the_failure_is_logged_with_the_event_id(t: Tidings,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    published = t.publish({"type": "broken", "actor": "alice", "recipients": ["bob"],
                           "payload": {"n": "logged-with-id"}})
    t.run_jobs()

    with caplog.at_level(logging.WARNING, logger="tidings.rendering"):
        t.notifications("bob")

    messages = [r.getMessage() for r in caplog.records if r.name == "tidings.rendering"]
    assert any(f"event {published.id}:" in m for m in messages), messages


def test_a_stored_definition_that_does_not_validate_breaks_nothing(t: Tidings) -> None:
    bad = {"name": "legacy", "templates": {"title": "\ud800"}}  # stored before it was checked
    t.store.transact(lambda tx: tx.settings.save_type("legacy", json.dumps(bad), 0))

    t.load_types()

    assert "legacy" not in t.types
    assert "broken" in t.types
