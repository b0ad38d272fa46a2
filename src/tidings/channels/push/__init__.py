"""Web Push: the ``push`` channel (RFC 8030 delivery, RFC 8291 ``aes128gcm`` payloads, RFC
8292 VAPID), on for a type by ``channels = [.., "push"]`` and per user and category in
preferences, like email; it needs ``TIDINGS_VAPID_PRIVATE_KEY``.

A browser subscribes (``POST /v1/users/{user}/push-subscriptions`` with its
``PushSubscription``, :class:`Registrations`); fan-out queues one job per (user, display
bundle) for users who have a subscription (:func:`schedule`), and the job posts a small
encrypted JSON payload to each of the user's endpoints (``channels/push/deliver.py``).
Endpoints pass the webhooks' guard against server-side request forgery (``netguard``,
``TIDINGS_WEBHOOK_ALLOW``) when registered and again before every POST.
"""

from __future__ import annotations

from collections.abc import Mapping

from cryptography.hazmat.primitives.asymmetric import ec

from tidings.channels import netguard
from tidings.channels.push import deliver
from tidings.channels.push.deliver import PUSH, spec
from tidings.channels.push.keys import load
from tidings.channels.registry import Channel, Outgoing
from tidings.clock import Clock
from tidings.config import Config
from tidings.domain.preferences import push_delay
from tidings.domain.push import (
    MAX_ENDPOINT,
    PushSubscription,
    b64url_decode,
    checked_keys,
    endpoint_hash,
)
from tidings.exceptions import ConfigError, InvalidInput, NotFound
from tidings.jobs.context import Handler, JobContext
from tidings.ports import Store, Tx

__all__ = ["CHANNEL", "PUSH", "Registrations", "schedule"]


def schedule(ctx: JobContext, tx: Tx, out: Outgoing) -> None:
    """One job per (user, bundle) for the users whose plan has push and who subscribed."""
    if not ctx.config.vapid_private_key:
        return
    wanted = [u for u, plan in out.plans.items() if plan.push]
    if not wanted:
        return
    subscribed = tx.push.subscribed(wanted)
    now = ctx.clock.now_us()
    specs = []
    for user in wanted:
        if user in subscribed:  # a delayed push job sends nothing read meanwhile
            delay = push_delay(out.prefs.get(user), out.event_type)
            specs.append(spec(user, out.event.id, out.bundle_hash, out.event_type.priority,
                              run_after=now + delay * 1_000_000 if delay else None))
    tx.jobs.enqueue_many(specs)


class Registrations:
    """Browsers' subscriptions as the API sees them: checked, stored, listed, removed."""

    def __init__(self, store: Store, clock: Clock, config: Config) -> None:
        self.store = store
        self.clock = clock
        self.config = config
        if config.vapid_private_key:
            load(config.vapid_private_key)  # a key that is not one stops the start: ConfigError

    def public_key(self) -> str:
        """The VAPID public key the page subscribes with; NotFound if push is not set up."""
        if not self.config.vapid_private_key:
            raise NotFound("Web Push is not configured on this server "
                           "(TIDINGS_VAPID_PRIVATE_KEY)")
        return load(self.config.vapid_private_key).public_key

    def add(self, user: str, subscription: Mapping[str, object]) -> PushSubscription:
        """Store a browser's ``PushSubscription`` (``endpoint``, ``keys.p256dh``,
        ``keys.auth``); InvalidInput says what is wrong with it."""
        endpoint = subscription.get("endpoint")
        if not isinstance(endpoint, str) or not endpoint or len(endpoint) > MAX_ENDPOINT:
            raise InvalidInput(f"endpoint must be a URL of at most {MAX_ENDPOINT} characters",
                               field="endpoint")
        keys = subscription.get("keys")
        if not isinstance(keys, Mapping):
            raise InvalidInput("keys must be an object with p256dh and auth", field="keys")
        p256dh, auth = checked_keys(keys.get("p256dh"), keys.get("auth"))
        try:
            ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(p256dh))
        except ValueError:
            raise InvalidInput("keys.p256dh is not a point on the P-256 curve",
                               field="keys.p256dh") from None
        try:
            allow = netguard.allow_list(self.config.webhook_allow)
        except ValueError as exc:
            raise ConfigError(f"TIDINGS_WEBHOOK_ALLOW: {exc}") from None
        try:
            netguard.check(endpoint, allow, unresolved_ok=True)  # may resolve: outside a unit
        except netguard.UnsafeUrl as exc:
            message = str(exc).replace("webhooks", "push endpoints").replace("a webhook URL",
                                                                              "an endpoint")
            raise InvalidInput(f"endpoint: {message}", field="endpoint") from None
        now = self.clock.now_us()
        new_id = self.store.transact(lambda tx: tx.push.add_push_subscription(
            user, endpoint, endpoint_hash(endpoint), p256dh, auth, now))
        return PushSubscription(new_id, user, endpoint, p256dh, auth, now)

    def list(self, user: str) -> list[PushSubscription]:
        with self.store.read() as tx:
            return tx.push.push_subscriptions(user)

    def remove(self, user: str, subscription_id: int | str) -> None:
        try:
            number = int(subscription_id)
        except ValueError:
            raise NotFound("no such push subscription") from None
        if not self.store.transact(lambda tx: tx.push.delete_push_subscription(user, number)):
            raise NotFound("no such push subscription")


CHANNEL = Channel(name="push", schedule=schedule,
                  handlers={PUSH: Handler(prepare=deliver.prepare, send=deliver.send,
                                          finish=deliver.finish)},
                  enabled=lambda config: bool(config.vapid_private_key))
