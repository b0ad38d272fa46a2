"""SQL-shape checks run on the SQL backends only: here ``t`` is an engine on ``store_url``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engines import open_tidings
from tidings.clock import FrozenClock
from tidings.engine import Tidings


@pytest.fixture
def t(store_url: str, clock: FrozenClock) -> Iterator[Tidings]:
    """An engine on a SQL ``store_url`` with the types of ``engines.py`` and ``clock``."""
    with open_tidings(store_url, clock=clock) as tidings:
        yield tidings
