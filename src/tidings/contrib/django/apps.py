"""The Django app: ``INSTALLED_APPS = [..., "tidings.contrib.django"]``."""

from __future__ import annotations

import logging
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings
from django.db.models.signals import post_delete, post_migrate

log = logging.getLogger("tidings.django")


class TidingsConfig(AppConfig):
    name = "tidings.contrib.django"
    label = "tidings"
    verbose_name = "tidings"

    def ready(self) -> None:
        post_migrate.connect(_migrated, sender=self, dispatch_uid="tidings.migrate")
        user_model = apps.get_model(settings.AUTH_USER_MODEL)
        post_delete.connect(_user_deleted, sender=user_model, dispatch_uid="tidings.erase")


def _migrated(sender: AppConfig, verbosity: int = 1, **_: Any) -> None:
    """``manage.py migrate`` migrates tidings' own database as well."""
    from tidings.contrib.django.runtime import migrate
    url = migrate()
    if verbosity:
        print(f"  tidings: schema of {url} is up to date")


def _user_deleted(sender: Any, instance: Any, using: str, **_: Any) -> None:
    from django.db import transaction

    from tidings.contrib.django.conf import options
    from tidings.contrib.django.erase import erase_user
    from tidings.contrib.django.runtime import user_id
    if not options().erase_on_delete:
        return
    user = user_id(instance)
    transaction.on_commit(lambda: erase_user(user), using=using)
