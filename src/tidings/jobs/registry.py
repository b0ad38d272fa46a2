"""The job functions tidings runs, as data: name → handler."""

from __future__ import annotations

from collections.abc import Sequence

from tidings.channels.registry import Channel
from tidings.fanout import maintenance
from tidings.fanout.plan import FanOut
from tidings.fanout.specs import FANOUT, FANOUT_CHUNK, RETENTION, TRIM
from tidings.jobs.context import Handler


def handlers(channels: Sequence[Channel]) -> dict[str, Handler]:
    """Fan-out, maintenance, and every handler the channels bring."""
    fanout = FanOut(channels)
    table = {
        FANOUT: Handler(run=fanout.run_fanout, run_many=fanout.run_fanouts),
        FANOUT_CHUNK: Handler(run=fanout.run_chunk),
        TRIM: Handler(run=maintenance.run_trim),
        RETENTION: Handler(run=maintenance.run_retention),
    }
    for channel in channels:
        table.update(channel.handlers)
    return table
