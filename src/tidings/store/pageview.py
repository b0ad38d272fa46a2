"""``InboxStore.page_view`` as the port's three smaller reads, for stores where one read cannot
do it (memory, Redis, SQLite, MariaDB/MySQL): the watermarks, the page under them, then the
group info of the listed rows whose type bundles."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from tidings.domain.readstate import Markers
from tidings.domain.views import Filters, GroupInfo, InboxRow, PageView


class Reads(Protocol):
    """The inbox reads a page view is made of (a subset of ``InboxStore``)."""

    def load_markers(self, user: str) -> Markers: ...
    def page(self, user: str, filters: Filters, markers: Markers, *, limit: int,
             before: tuple[int, int] | None) -> list[InboxRow]: ...
    def group_info(self, user: str, groups: Sequence[str]) -> dict[str, GroupInfo]: ...


def page_view(inbox: Reads, user: str, filters: Filters, *, limit: int,
              before: tuple[int, int] | None, bundles: Callable[[str], bool]) -> PageView:
    markers = inbox.load_markers(user)
    rows = inbox.page(user, filters, markers, limit=limit, before=before)
    groups = inbox.group_info(user, [r.display_hash for r in rows if bundles(r.type)])
    return PageView(markers, rows, groups)
