"""``manage.py tidings_migrate``: create or upgrade tidings' schema (``migrate`` does it too)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from tidings.contrib.django.runtime import migrate


class Command(BaseCommand):
    help = "Create or upgrade tidings' own schema (manage.py migrate also does it)."

    def handle(self, *args: Any, **opts: Any) -> None:
        self.stdout.write(f"tidings: schema of {migrate()} is up to date")
