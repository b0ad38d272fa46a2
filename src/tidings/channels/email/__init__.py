"""Email: immediate mail with Echo's bundling windows, daily and weekly digests, a daily cap,
one-click unsubscribe. Scheduling happens in fan-out (``schedule``); sending in jobs (``jobs``)
outside any database transaction."""

from __future__ import annotations

from tidings.channels.email.jobs import BUNDLE_HANDLER, DIGEST_HANDLER, SEND_HANDLER
from tidings.channels.email.links import follow_link
from tidings.channels.email.schedule import BUNDLE, DIGEST, SEND, cancel, cancel_for, schedule
from tidings.channels.email.tokens import (
    BadLink,
    StaleLink,
    Unsubscribe,
    check_address,
    read_unsubscribe_token,
    signing_secret,
    unsubscribe_token,
)
from tidings.channels.registry import Channel

CHANNEL = Channel(
    name="email", schedule=schedule, on_retract=cancel, on_delete=cancel_for,
    handlers={SEND: SEND_HANDLER, BUNDLE: BUNDLE_HANDLER, DIGEST: DIGEST_HANDLER},
    enabled=lambda config: bool(config.smtp_url),
)

__all__ = ["CHANNEL", "BadLink", "StaleLink", "Unsubscribe", "check_address", "follow_link",
           "read_unsubscribe_token", "signing_secret", "unsubscribe_token"]
