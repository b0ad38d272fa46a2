"""Outbound channels (email, webhooks, Web Push; the web channel is the inbox itself)."""

from __future__ import annotations

from tidings.channels import email, push, webhook
from tidings.channels.registry import Channel


def outbound_channels() -> list[Channel]:
    """Every outbound channel tidings ships with, in the order fan-out schedules them."""
    return [email.CHANNEL, webhook.CHANNEL, push.CHANNEL]
