"""Web Push against a push-service stand-in on loopback (``pushservice.py``), which checks the
VAPID JWT against the published key and decrypts each payload with the browser's key: the
payload and headers, 404/410 (subscription gone), 429 with Retry-After and 5xx (retried by the
job queue), the address guard, and the subscription routes over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pushservice import PushService
from servers import LiveServer
from store_registry import KINDS_BY_NAME, names
from tidings.channels.push import keys
from tidings.channels.push.deliver import topic, urgency
from tidings.clock import FrozenClock
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.exceptions import ConfigError, InvalidInput, NotFound

pytest_plugins = ["servers"]

PRIVATE, PUBLIC = keys.generate()
TYPES = (
    EventType("mention", category="mention", priority=2, channels=("web", "push"),
              audience=("recipients",),
              templates=Templates(title="{{ actor }} mentioned you", link="/pages/{{ object }}")),
    EventType("linked", category="linked", priority=9, bundle="object",
              channels=("web", "push"), audience=("recipients",),
              templates=Templates(title="linked by {{ actors_text }}",
                                  bundled_title="linked by {{ actors_text }}")),
    EventType("quiet", category="quiet", audience=("recipients",)),  # web only
    EventType("reply", category="reply", channels=("web", "push"), audience=("recipients",),
              push_delay_seconds=300, templates=Templates(title="{{ actor }} replied")),
)


@pytest.fixture(params=names())
def push_store(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The settings of a clean store of each kind (``store_registry.KINDS``)."""
    with KINDS_BY_NAME[request.param].place(request) as place:
        yield {"database_url": place.url,
               **({"hot_store_url": place.hot_url} if place.hot_url else {})}


def make(store: dict[str, str], **settings: Any) -> tuple[Tidings, FrozenClock]:
    clock = FrozenClock()
    config = {"vapid_private_key": PRIVATE, "webhook_allow": ("127.0.0.1",),
              "job_backoff_seconds": 2.0, "public_url": "https://wiki.example", **store,
              **settings}
    return Tidings(Config(**config), types=TYPES, clock=clock), clock


@pytest.fixture
def service() -> Iterator[PushService]:
    with PushService(PUBLIC) as service:
        yield service


def test_a_push_is_signed_encrypted_and_says_what_happened(push_store: dict[str, str],
                                                           service: PushService) -> None:
    t, _ = make(push_store)
    phone, laptop = service.browser("phone"), service.browser("laptop")
    t.push.add("bob", phone.subscription())
    t.push.add("bob", laptop.subscription())
    published = t.publish(Event("mention", actor="alice", object="Home", recipients=["bob"]))
    t.publish(Event("quiet", actor="carol", recipients=["bob"]))  # no push for this type
    t.run_jobs()
    assert service.errors == []
    for name in ("phone", "laptop"):
        [got] = service.received[name]
        assert got["payload"] == {"title": "alice mentioned you", "body": None,
                                  "link": "https://wiki.example/pages/Home", "unread": 2,
                                  "id": published.id, "group": got["payload"]["group"]}
        assert got["payload"]["group"]
        headers = got["headers"]
        assert (headers["Urgency"], int(headers["TTL"])) == urgency(2) == ("high", 7 * 86400)
        assert len(headers["Topic"]) == 32
    t.close()


def test_a_bundle_is_one_topic_and_its_count_grows(push_store: dict[str, str],
                                                  service: PushService) -> None:
    t, _ = make(push_store)
    service.browser("phone")
    t.push.add("bob", service.browsers["phone"].subscription())
    t.publish(Event("linked", actor="alice", object="Home", recipients=["bob"]))
    t.run_jobs()
    t.publish(Event("linked", actor="carol", object="Home", recipients=["bob"]))
    t.run_jobs()
    first, second = service.received["phone"]
    assert first["headers"]["Topic"] == second["headers"]["Topic"]  # the newer replaces
    assert first["payload"]["group"] == second["payload"]["group"]
    assert first["payload"]["title"] == "linked by alice"
    assert second["payload"]["title"] == "linked by carol and 1 other"
    assert (second["headers"]["Urgency"], second["headers"]["TTL"]) == ("very-low", "3600")
    t.publish(Event("linked", actor="dave", object="Other", recipients=["bob"]))
    t.run_jobs()
    assert service.received["phone"][2]["headers"]["Topic"] != first["headers"]["Topic"]
    assert topic("a") != topic("b") and len(topic("a")) == 32
    t.close()


@pytest.mark.parametrize("status", [404, 410])
def test_a_gone_subscription_is_deleted(push_store: dict[str, str], service: PushService,
                                        status: int) -> None:
    t, clock = make(push_store)
    service.browser("old")
    service.browser("new")
    t.push.add("bob", service.browsers["old"].subscription())
    t.push.add("bob", service.browsers["new"].subscription())
    service.answer("old", status)
    t.publish(Event("mention", actor="alice", recipients=["bob"]))
    t.run_jobs()
    assert [s.endpoint for s in t.push.list("bob")] == [service.browsers["new"].endpoint]
    clock.advance(3600)
    t.run_jobs()
    assert len(service.received["old"]) == 1  # not tried again
    assert "push" not in t.queue.counts_by_func()
    t.close()


def test_429_waits_for_retry_after_and_5xx_backs_off(push_store: dict[str, str],
                                                     service: PushService) -> None:
    t, clock = make(push_store)
    service.browser("busy")
    service.browser("broken")
    service.browser("fine")
    for name in ("busy", "broken", "fine"):
        t.push.add("bob", service.browsers[name].subscription())
    service.answer("busy", (429, {"Retry-After": "120"}))
    service.answer("broken", 503, 500)
    t.publish(Event("mention", actor="alice", recipients=["bob"]))
    t.run_jobs()
    assert [len(service.received[n]) for n in ("busy", "broken", "fine")] == [1, 1, 1]
    clock.advance(60)  # past the backoff, not past Retry-After
    t.run_jobs()
    assert len(service.received["busy"]) == 1
    assert len(service.received["fine"]) == 1  # delivered: never again
    clock.advance(61)
    t.run_jobs()
    assert len(service.received["busy"]) == 2
    assert service.received["busy"][1]["status"] == 201
    assert len(service.received["broken"]) == 2
    clock.advance(3600)
    t.run_jobs()
    assert [len(service.received[n]) for n in ("busy", "broken", "fine")] == [2, 3, 1]
    assert service.received["broken"][2]["status"] == 201
    clock.advance(3600)
    t.run_jobs()
    assert [len(service.received[n]) for n in ("busy", "broken", "fine")] == [2, 3, 1]
    assert service.errors == []
    t.close()


def test_a_retry_sends_nothing_once_the_notification_is_read(
        push_store: dict[str, str], service: PushService) -> None:
    t, clock = make(push_store)
    service.browser("phone")
    t.push.add("bob", service.browsers["phone"].subscription())
    service.answer("phone", (429, {"Retry-After": "60"}))
    published = t.publish(Event("mention", actor="alice", recipients=["bob"]))
    t.run_jobs()
    assert len(service.received["phone"]) == 1
    t.mark_read("bob", [published.id])  # seen on the web meanwhile
    clock.advance(3600)
    t.run_jobs()
    assert len(service.received["phone"]) == 1
    assert "push" not in t.queue.counts_by_func()
    t.close()


def test_a_delayed_push_goes_only_if_still_unread_then(push_store: dict[str, str],
                                                        service: PushService) -> None:
    """``push_delay_seconds``: in-app first; the push goes N seconds after delivery only if
    the notification is unread then — read on the web, or retracted, it never goes."""
    t, clock = make(push_store)
    service.browser("phone")
    t.push.add("bob", service.browsers["phone"].subscription())
    read = t.publish(Event("reply", actor="alice", object="a", recipients=["bob"]))
    t.run_jobs()
    assert service.received.get("phone", []) == []  # not yet
    t.mark_read("bob", [read.id])
    clock.advance(301)
    t.run_jobs()
    assert service.received.get("phone", []) == []  # read meanwhile: never

    t.publish(Event("reply", actor="carol", object="b", recipients=["bob"]))
    t.publish(Event("reply", actor="dave", object="c", recipients=["bob"]))
    t.run_jobs()
    t.retract(actor="dave")
    clock.advance(299)
    t.run_jobs()
    assert service.received.get("phone", []) == []
    clock.advance(2)
    t.run_jobs()
    assert [r["payload"]["title"] for r in service.received.get("phone", [])] == ["carol replied"]
    assert "push" not in t.queue.counts_by_func()
    t.close()


def test_a_users_category_delay_replaces_the_types(push_store: dict[str, str],
                                                   service: PushService) -> None:
    t, clock = make(push_store)
    service.browser("phone")
    t.push.add("bob", service.browsers["phone"].subscription())
    t.set_preferences("bob", {"push": {"delays": {"mention": {"push_delay_seconds": 60},
                                                  "reply": {"push_delay_seconds": 0}}}})
    t.publish(Event("mention", actor="alice", recipients=["bob"]))  # its type: at once
    t.run_jobs()
    assert service.received.get("phone", []) == []  # bob waits a minute for mentions
    clock.advance(61)
    t.run_jobs()
    assert [r["payload"]["title"] for r in service.received["phone"]] == [
        "alice mentioned you"]
    t.close()


def test_preferences_turn_push_off_per_category(push_store: dict[str, str],
                                                service: PushService) -> None:
    t, _ = make(push_store)
    service.browser("phone")
    t.push.add("bob", service.browsers["phone"].subscription())
    t.set_preferences("bob", {"channels": {"mention": {"push": False}}})
    t.publish(Event("mention", actor="alice", recipients=["bob"]))
    t.publish(Event("linked", actor="alice", object="Home", recipients=["bob"]))
    t.run_jobs()
    assert [r["payload"]["title"] for r in service.received["phone"]] == ["linked by alice"]
    t.close()


def test_no_job_without_a_subscription_or_a_key(push_store: dict[str, str],
                                                service: PushService) -> None:
    t, _ = make(push_store)
    assert "push" in t.enabled_channels
    t.publish(Event("mention", actor="alice", recipients=["bob"]))  # bob has no browser
    t.run_jobs()
    assert t.push.list("bob") == [] and service.received == {}
    t.close()
    t, _ = make(push_store, vapid_private_key=None)
    assert "push" not in t.enabled_channels
    with pytest.raises(NotFound):
        t.push.public_key()
    t.close()


def test_subscriptions_are_checked(push_store: dict[str, str], service: PushService) -> None:
    t, _ = make(push_store, webhook_allow=())
    good = service.browser("phone").subscription()
    with pytest.raises(InvalidInput, match="loopback"):
        t.push.add("bob", good)  # the service is on loopback, not allowed here
    public = {**good, "endpoint": "https://push.example/abc"}
    bad_keys = [({**public["keys"], "p256dh": "AAAA"}, "keys.p256dh"),
                ({**public["keys"], "p256dh": public["keys"]["p256dh"][:-4]}, "keys.p256dh"),
                ({**public["keys"], "auth": "not base64!"}, "keys.auth"),
                ({"p256dh": public["keys"]["p256dh"]}, "keys.auth")]
    for keys_, field in bad_keys:
        with pytest.raises(InvalidInput) as caught:
            t.push.add("bob", {**public, "keys": keys_})
        assert caught.value.field == field
    with pytest.raises(InvalidInput, match="https"):
        t.push.add("bob", {**public, "endpoint": "http://push.example/abc"})
    assert t.push.list("bob") == []
    first = t.push.add("bob", public)
    again = t.push.add("carol", public)  # the browser now belongs to carol
    assert t.push.list("bob") == []
    assert [s.id for s in t.push.list("carol")] == [again.id]
    assert again.id != first.id  # ids are never reused
    with pytest.raises(NotFound):
        t.push.remove("bob", again.id)
    t.push.remove("carol", again.id)
    assert t.push.list("carol") == []
    t.close()


def test_the_routes(start_server: Any, service: PushService) -> None:
    live: LiveServer = start_server(config={"vapid_private_key": PRIVATE,
                                            "webhook_allow": ("127.0.0.1",)})
    subscription = service.browser("phone").subscription()
    with live.http(live.token("bob")) as bob:
        assert bob.get("/v1/push/public-key").json() == {"public_key": PUBLIC}
        created = bob.post("/v1/me/push-subscriptions", json=subscription)
        assert created.status_code == 201, created.text
        listed = bob.get("/v1/me/push-subscriptions").json()["items"]
        assert [(i["id"], i["endpoint"]) for i in listed] == [
            (created.json()["id"], subscription["endpoint"])]
        bad = bob.post("/v1/me/push-subscriptions",
                       json={**subscription, "keys": {"p256dh": "xx", "auth": "yy"}})
        assert bad.status_code == 422
        assert "p256dh" in bad.text
        assert bob.get("/v1/users/carol/push-subscriptions").status_code == 403
        gone = bob.delete(f"/v1/me/push-subscriptions/{created.json()['id']}")
        assert gone.status_code == 204
        assert bob.delete(f"/v1/me/push-subscriptions/{created.json()['id']}"
                          ).status_code == 404
    with live.http() as server:
        again = server.post("/v1/users/bob/push-subscriptions", json=subscription)
        assert again.status_code == 201
        assert len(server.get("/v1/users/bob/push-subscriptions").json()["items"]) == 1


def test_vapid_keys_prints_a_pair_the_server_takes() -> None:
    from typer.testing import CliRunner

    from tidings.cli import app

    result = CliRunner().invoke(app, ["vapid-keys"])
    assert result.exit_code == 0, result.output
    private = result.output.split("TIDINGS_VAPID_PRIVATE_KEY=")[1].split()[0]
    public = result.output.rsplit(" ", 1)[1].strip()
    assert keys.load(private).public_key == public
    for bad in ("not a key", PRIVATE[:-2], "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END"):
        with pytest.raises(ConfigError, match="P-256"):
            keys.load(bad)
    with pytest.raises(ConfigError, match="TIDINGS_VAPID_PRIVATE_KEY"):
        Tidings(Config(database_url="memory://", vapid_private_key="not a key"))
