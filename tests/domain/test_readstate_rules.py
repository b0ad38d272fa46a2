"""The pure read-state rules (``tidings.domain.readstate``) for the read-up-to mark."""

from __future__ import annotations

from tidings.domain.readstate import Markers

MARK = Markers.from_rows({"position": 500}, (300, 7))  # set at 500, up to (300, 7)


def unread(fresh_at: int, created_at: int, event_id: int, markers: Markers = MARK) -> bool:
    return markers.is_unread(None, fresh_at, "t", "c", "alert",
                             position=(created_at, event_id))


def test_at_or_below_the_place_and_fresh_before_the_mark_is_read() -> None:
    assert not unread(300, 300, 7)
    assert not unread(300, 300, 6)
    assert not unread(100, 100, 90)  # an older place, whatever its id


def test_above_the_place_is_unread() -> None:
    assert unread(300, 300, 8)
    assert unread(301, 301, 1)


def test_marked_unread_after_the_mark_is_unread() -> None:
    assert unread(501, 100, 1)


def test_a_position_row_without_a_place_is_ignored() -> None:
    assert Markers.from_rows({"position": 500}).position is None
    assert unread(100, 100, 1, Markers.from_rows({"position": 500}))
