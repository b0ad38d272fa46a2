"""Positions in an inbox, and what came after one: what a live stream announces at each look
and replays to a client that reconnects with ``Last-Event-ID``.

A position is the ``(created_at, event id)`` of a base row, the order the inbox list and its
cursors have: a bundle that takes a new member moves up with it, a delivery that commits late
is placed by its time. Reading after a position is reading the list's first rows and keeping
those above it, so it needs nothing of a store beyond the page read every store has.
"""

from __future__ import annotations

from collections.abc import Callable

from tidings.domain.events import check_user_id
from tidings.domain.views import Filters, Newer
from tidings.i18n import normalise_locale
from tidings.ports import Store
from tidings.services.listing import ItemDrawer

NOT_FILTERED = Filters()


def newer(store: Store, bundles: Callable[[str], bool], drawer: ItemDrawer, user: str,
          after: tuple[int, int] | None, *, limit: int, locale: str | None = None) -> Newer:
    """The items of ``user``'s inbox placed after ``after``, oldest first, when there are at
    most ``limit`` of them (else none, and ``complete`` False); ``after`` None asks for none
    (a first look, which only learns where the inbox is). ``bundles``: whether a type
    bundles; ``drawer`` draws the items."""
    check_user_id(user)
    language = normalise_locale(locale)
    with store.read() as tx:
        view = tx.inbox.page_view(user, NOT_FILTERED, limit=limit + 1, before=None,
                                  bundles=bundles)
    rows = view.rows
    top = (rows[0].created_at, rows[0].event_id) if rows else None
    if after is None:
        return Newer([], top, complete=True)
    fresh = [row for row in rows if (row.created_at, row.event_id) > after]
    if len(fresh) > limit:
        return Newer([], top, complete=False)
    draw, markers = drawer.item, view.markers
    return Newer([((row.created_at, row.event_id),
                   draw(row, view.groups.get(row.display_hash), markers, language))
                  for row in reversed(fresh)], top, complete=True)
