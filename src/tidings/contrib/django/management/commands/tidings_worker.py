"""``manage.py tidings_worker``: run tidings' jobs (fan-out, mail, webhooks) until stopped."""

from __future__ import annotations

import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tidings.contrib.django.runtime import get_tidings


class Command(BaseCommand):
    help = "Run tidings' job worker (fan-out, email, webhooks) until SIGINT or SIGTERM."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--concurrency", type=int, default=2,
                            help="threads for fan-out, mail and maintenance")
        parser.add_argument("--once", action="store_true",
                            help="run every runnable job, then stop")

    def handle(self, *args: Any, **opts: Any) -> None:
        tidings = get_tidings()
        if opts["once"]:
            done = tidings.run_jobs()
            self.stdout.write(f"tidings: ran {done} jobs")
            return
        worker = tidings.worker(concurrency=opts["concurrency"])
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: worker.request_stop())
        self.stdout.write(f"tidings worker started on {tidings.store.backend}")
        worker.run_forever()
