"""No tables: tidings keeps its data in its own database (tidings.contrib.django.conf). The
models here are unmanaged handles, so that the admin lists tidings' pages (event types, a
user's inbox, failed jobs) under Django's own permissions; and the module makes Django send this
app ``post_migrate``, which migrates that database."""

from __future__ import annotations

from django.db import models


class EventType(models.Model):
    class Meta:
        managed = False
        verbose_name = "event type"
        default_permissions = ("view",)


class Inbox(models.Model):
    class Meta:
        managed = False
        verbose_name = "user inbox"
        verbose_name_plural = "user inboxes"
        default_permissions = ("view",)


class FailedJob(models.Model):
    class Meta:
        managed = False
        verbose_name = "failed job"
        default_permissions = ("view", "change")  # change: queue it again
