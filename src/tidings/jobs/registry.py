"""The job functions tidings runs, as data: name → handler, and the worker's lanes for them."""

from __future__ import annotations

from collections.abc import Sequence

from tidings.channels import webhook
from tidings.channels.registry import Channel
from tidings.config import Config
from tidings.fanout import maintenance
from tidings.fanout.plan import FanOut
from tidings.fanout.specs import FANOUT, FANOUT_CHUNK, RETENTION, TRIM
from tidings.jobs.context import Handler
from tidings.jobs.lanes import Lane
from tidings.jobs.worker import WORKER_BATCH


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


def lanes(config: Config, concurrency: int, webhooks: int | None = None) -> list[Lane]:
    """A worker's lanes: ``concurrency`` threads for fan-out, mail and maintenance, and
    ``webhooks`` (default ``TIDINGS_WEBHOOK_CONCURRENCY``; 0: this worker leaves them to
    another) of their own for webhook deliveries, so a slow receiver can never hold up
    fan-out; at most ``TIDINGS_WEBHOOK_HOST_CONCURRENCY`` of them deliver to one host at once,
    so it cannot hold up other hosts' deliveries either."""
    apart = config.webhook_concurrency if webhooks is None else webhooks
    return Lane.apart(concurrency, "webhooks", (webhook.WEBHOOK,), apart, batch=WORKER_BATCH,
                      per_group=config.webhook_host_concurrency)
