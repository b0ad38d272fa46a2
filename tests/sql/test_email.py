"""Email through a real SMTP server (aiosmtpd): immediate, bundling windows, digests in two time
zones, the daily cap, unsubscribe, bounces, header injection and retraction — on SQLite and
PostgreSQL."""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator
from datetime import UTC, datetime
from email.header import decode_header, make_header
from email.message import EmailMessage
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from backends import require
from live import LiveServer
from smtp import SmtpSink, check_aiosmtpd
from tidings.api.app import create_app
from tidings.channels.email import read_unsubscribe_token, unsubscribe_token
from tidings.channels.email.smtp import tls_context
from tidings.clock import FrozenClock, from_datetime
from tidings.config import Config
from tidings.domain.events import Event
from tidings.domain.types import EventType, Templates
from tidings.engine import Tidings
from tidings.store.sql.schema import email_batch, email_log, jobs

MONDAY = from_datetime(datetime(2026, 1, 5, 0, 0, tzinfo=UTC))  # 00:00 UTC, a Monday
HOUR = 3600.0
SECRET = "email-test-secret-of-at-least-32-bytes"
TYPES = [
    EventType("page-linked", bundle="object", priority=5, channels=("web", "email"),
              audience=("recipients",), templates=Templates(
                  title="{{ object_title }} was linked by {{ actors_text }}",
                  link="/wiki/{{ object }}")),
    EventType("mention", priority=2, channels=("web", "email"), audience=("recipients",),
              templates=Templates(title="{{ actor }} mentioned you: {{ payload.text }}")),
    EventType("edit", priority=8, channels=("web", "email"), audience=("recipients",),
              templates=Templates(title="{{ actor }} edited {{ object_title }}")),
    EventType("security", category="security", priority=1, channels=("web", "email"),
              mandatory=True, audience=("recipients",),
              templates=Templates(title="New sign-in to your account")),
]


@pytest.fixture(params=["sqlite", "postgresql"])
def mail_store(request: pytest.FixtureRequest) -> Iterator[str]:
    stores = request.getfixturevalue(f"{request.param}_stores")
    url = stores.clone()
    yield url
    stores.drop(url)


class World:
    def __init__(self, url: str, sink: SmtpSink, **settings: Any) -> None:
        self.clock = FrozenClock(MONDAY)
        settings.setdefault("mail_from", "Wiki <wiki@example.org>")
        config = Config(database_url=url, smtp_url=sink.url, public_url="https://wiki.example.org",
                        token_secret=SECRET, **settings)
        self.t = Tidings(config, types=TYPES, clock=self.clock)
        self.sink = sink

    def user(self, name: str, frequency: str = "immediate", tz: str = "UTC",
             hour: int = 8) -> str:
        self.t.set_preferences(name, {"email": {"address": f"{name}@example.org",
                                                "frequency": frequency, "timezone": tz,
                                                "digest_hour": hour}})
        return f"{name}@example.org"

    def publish(self, type: str, actor: str, to: str, **fields: Any) -> str:
        published = self.t.publish(Event(type, actor=actor, recipients=[to], **fields))
        self.t.run_jobs()
        return published.id

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.t.run_jobs()

    def mails(self, address: str) -> list[Any]:
        return self.sink.to(address)


@pytest.fixture
def world(mail_store: str, sink: SmtpSink) -> Iterator[World]:
    w = World(mail_store, sink)
    yield w
    w.t.close()


def text_of(message: Any) -> str:
    return str(message.get_body(("plain",)).get_content())


def html_of(message: Any) -> str:
    return str(message.get_body(("html",)).get_content())


def test_immediate_mail_is_multipart_with_one_click_unsubscribe(world: World) -> None:
    bob = world.user("bob")
    world.publish("mention", "alice", "bob", payload={"text": "see <b>this</b>"})
    (mail,) = world.sink.wait_for(1)
    assert mail["To"] == bob
    assert mail["Subject"] == "alice mentioned you: see <b>this</b>"
    assert "alice mentioned you: see <b>this</b>" in text_of(mail)
    assert "see &lt;b&gt;this&lt;/b&gt;" in html_of(mail)  # autoescaped in HTML
    assert mail["Message-ID"].startswith("<single.") and mail["Message-ID"].endswith(
        "@example.org>")
    assert one_click(mail["List-Unsubscribe"]) == ("bob", "category", "general")
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert world.t.notifications("bob").items[0].read is False  # the web inbox has it too


def one_click(header: str) -> tuple[str, str, str]:
    """The user, purpose and target of a ``List-Unsubscribe`` header's link."""
    found = re.fullmatch(r"<https://wiki\.example\.org/v1/unsubscribe/([A-Za-z0-9_.-]+)>", header)
    assert found, header
    link = read_unsubscribe_token(SECRET, found[1])
    return link.user, link.purpose, link.target


def test_unsubscribe_links_name_only_what_every_item_shares(world: World) -> None:
    bob = world.user("bob", "daily")
    world.publish("mention", "alice", "bob", object="page:A", payload={"text": "x"})
    world.publish("edit", "carol", "bob", object="page:B")
    world.advance(9 * HOUR)  # the digest, at 08:00: one category, two pages
    (digest,) = world.mails(bob)
    text = text_of(digest)
    assert 'No more mail about "general" notifications: https://' in text
    assert "this page or thread" not in text and "No notification mail at all: https" in text
    assert one_click(digest["List-Unsubscribe"]) == ("bob", "category", "general")
    carl = world.user("carl")
    world.publish("security", "system", "carl", object="account:carl")
    (mandatory,) = world.mails(carl)  # a mandatory type: only the all-mail link
    text = text_of(mandatory)
    assert "No more mail about" not in text and "No notification mail at all: https" in text
    assert one_click(mandatory["List-Unsubscribe"]) == ("carl", "all", "immediate")


def raw_headers(raw: bytes) -> dict[str, str]:
    """The header block as it went over the wire, unfolded (RFC 5322 2.2.3: a line break
    followed by whitespace is removed) and not decoded."""
    head = re.split(rb"\r?\n\r?\n", raw, maxsplit=1)[0].decode("ascii")  # 7-bit headers
    headers: dict[str, str] = {}
    for line in re.split(r"\r?\n(?![ \t])", head):
        name, _, value = line.partition(":")
        assert name not in headers, f"{name} sent twice"
        headers[name] = re.sub(r"\r?\n(?=[ \t])", "", value).strip()
    return headers


def raw_lines(raw: bytes) -> list[str]:
    return re.split(r"\r?\n", re.split(rb"\r?\n\r?\n", raw, maxsplit=1)[0].decode("ascii"))


@pytest.mark.parametrize("user", ["bob", "a-user-whose-id-is-long-enough-to-need-folding-0123"])
def test_list_unsubscribe_goes_out_literally_with_one_click_post(world: World,
                                                                 user: str) -> None:
    address = world.user(user)
    world.publish("mention", "alice", user, payload={"text": "see <b>this</b>"})
    (mail,) = world.sink.wait_for(1)
    headers = raw_headers(world.sink.raw[0])
    # RFC 2369 / 8058: the URL in angle brackets as is, never an RFC 2047 encoded-word
    assert one_click(headers["List-Unsubscribe"]) == (user, "category", "general")
    assert headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # every other header the mailer builds is sent as written when it is ASCII
    assert headers["From"] == "Wiki <wiki@example.org>"
    assert headers["To"] == address
    assert headers["Subject"] == "alice mentioned you: see <b>this</b>"
    assert headers["Message-ID"] == mail["Message-ID"]
    assert re.fullmatch(r"<single\.[0-9a-f]{32}@example\.org>", headers["Message-ID"])
    assert headers["Auto-Submitted"] == "auto-generated"
    assert not [name for name, value in headers.items() if "=?" in value]
    assert max(len(line) for line in raw_lines(world.sink.raw[0])) <= 998


def test_long_headers_are_folded_and_only_non_ascii_is_encoded(world: World) -> None:
    world.user("bob")
    long_ascii = "see " + "x" * 90 + " and then " + "a few more words " * 6
    world.publish("mention", "alice", "bob", payload={"text": long_ascii.strip()})
    world.publish("mention", "alice", "bob", payload={"text": "Grüße aus Köln " * 8})
    first, second = world.sink.wait_for(2)
    ascii_headers = raw_headers(world.sink.raw[0])
    assert ascii_headers["Subject"] == first["Subject"] == (
        "alice mentioned you: " + " ".join(long_ascii.split()))
    # folded at spaces: a line is longer than 78 only when it holds one word that is
    # (the 90 x's; the List-Unsubscribe URL)
    long_lines = [line for line in raw_lines(world.sink.raw[0]) if len(line) > 78]
    assert " " + "x" * 90 in long_lines
    assert all(len(line.removeprefix("List-Unsubscribe:").split()) == 1 for line in long_lines)
    encoded = raw_headers(world.sink.raw[1])["Subject"]
    assert encoded.startswith("alice mentioned you: =?utf-8?")  # RFC 2047 where it must be
    assert all(len(word) <= 75 for word in re.findall(r"=\?[^ ]*?\?=", encoded))
    assert second["Subject"] == "alice mentioned you: " + " ".join(
        ("Grüße aus Köln " * 8).split())
    assert max(len(line) for line in raw_lines(world.sink.raw[1])
               if not line.startswith("List-Unsubscribe:")) <= 78


def test_bundling_window_first_alone_then_one_bundle_then_reset(world: World) -> None:
    bob = world.user("bob")
    link = {"object": "page:San_Francisco"}
    world.publish("page-linked", "alice", "bob", **link)
    assert [m["Subject"] for m in world.mails(bob)] == ["San Francisco was linked by alice"]
    world.advance(1 * HOUR)
    world.publish("page-linked", "carol", "bob", **link)
    world.advance(1 * HOUR)
    world.publish("page-linked", "dave", "bob", **link)
    world.advance(1 * HOUR)  # 3 h after the first mail: the window is still open
    assert len(world.mails(bob)) == 1
    world.advance(1 * HOUR + 1)  # the window ends: one bundled mail
    subjects = [m["Subject"] for m in world.mails(bob)]
    assert subjects == ["San Francisco was linked by alice",
                        "San Francisco was linked by dave and 1 other"]
    assert "https://wiki.example.org/wiki/page:San_Francisco" in text_of(world.mails(bob)[1])
    world.advance(5 * HOUR)  # a whole window with nothing in it: the cycle resets
    world.publish("page-linked", "erin", "bob", **link)
    assert [m["Subject"] for m in world.mails(bob)][-1] == "San Francisco was linked by erin"
    assert len(world.mails(bob)) == 3
    ids = [m["Message-ID"] for m in world.mails(bob)]
    assert len(set(ids)) == 3


def test_daily_digests_at_each_users_local_hour(world: World) -> None:
    berlin = world.user("bert", "daily", "Europe/Berlin", 8)    # 07:00 UTC in winter
    york = world.user("nora", "daily", "America/New_York", 8)   # 13:00 UTC in winter
    for user in ("bert", "nora"):
        world.publish("mention", "alice", user, payload={"text": "hi"})
        world.publish("edit", "carol", user, object="page:Fog")
    assert world.sink.messages == []
    world.advance(7 * HOUR - 60)
    assert world.sink.messages == []
    world.advance(120)  # 07:01 UTC
    assert len(world.mails(berlin)) == 1 and world.mails(york) == []
    digest = world.mails(berlin)[0]
    assert digest["Subject"] == "Your daily notifications: 2 new"
    body = text_of(digest)
    # priority order: the mention (2) before the edit (8)
    assert body.index("alice mentioned you: hi") < body.index("carol edited Fog")
    world.advance(6 * HOUR)  # 13:01 UTC
    assert len(world.mails(york)) == 1
    assert digest["Message-ID"].startswith("<digest.")


def test_weekly_digest_waits_for_monday_and_caps_at_twenty(world: World) -> None:
    bob = world.user("bob", "weekly", "UTC", 9)
    world.advance(10 * HOUR)  # Monday 10:00, past this week's hour
    for n in range(23):
        world.publish("page-linked", f"u{n}", "bob", object=f"page:P{n}")
    world.advance(6 * 24 * HOUR)  # Sunday
    assert world.mails(bob) == []
    world.advance(24 * HOUR)  # next Monday 10:00 (> 09:00)
    (digest,) = world.mails(bob)
    assert digest["Subject"] == "Your weekly notifications: 23 new"
    body = text_of(digest)
    assert body.count("* ") == 20 and "and 3 more" in body


def test_digest_leaves_out_what_was_read_on_the_web(world: World) -> None:
    bob = world.user("bob", "daily")
    read_id = world.publish("mention", "alice", "bob", payload={"text": "old news"})
    world.publish("mention", "carol", "bob", payload={"text": "fresh"})
    world.t.mark_read("bob", [read_id])
    world.advance(9 * HOUR)
    (digest,) = world.mails(bob)
    assert "fresh" in text_of(digest) and "old news" not in text_of(digest)


def test_daily_cap_sends_the_rest_to_the_digest(mail_store: str, sink: SmtpSink) -> None:
    world = World(mail_store, sink, email_daily_cap=2)
    bob = world.user("bob", hour=8)
    for n in range(4):
        world.publish("mention", "alice", "bob", payload={"text": f"#{n}"})
    assert len(world.mails(bob)) == 2
    world.advance(9 * HOUR)
    mails = world.mails(bob)
    assert len(mails) == 3
    assert mails[2]["Subject"] == "Your daily notifications: 2 new"
    world.t.close()


def test_unsubscribe_get_shows_post_unsubscribes(mail_store: str, sink: SmtpSink) -> None:
    world = World(mail_store, sink)
    bob = world.user("bob")
    app = create_app(world.t, api_keys=("key",), token_secret=SECRET)
    token = unsubscribe_token(SECRET, "bob", bob, "all", "immediate")
    with LiveServer(app) as server:
        page = httpx.get(f"{server.url}/v1/unsubscribe/{token}")
        assert page.status_code == 200 and "<form method=\"post\">" in page.text
        assert world.t.get_preferences("bob")["email"]["frequency"] == "immediate"
        forged = httpx.post(f"{server.url}/v1/unsubscribe/{token[:-1]}0",
                            data={"List-Unsubscribe": "One-Click"})
        assert forged.status_code == 404
        done = httpx.post(f"{server.url}/v1/unsubscribe/{token}",
                          data={"List-Unsubscribe": "One-Click"})
        assert done.status_code == 200 and "unsubscribed" in done.text
    assert world.t.get_preferences("bob")["email"]["frequency"] == "never"
    world.publish("mention", "alice", "bob", payload={"text": "x"})
    assert world.mails(bob) == []
    assert world.t.unread_count("bob").count == 1  # the web goes on
    world.t.close()


def test_mandatory_category_is_mailed_even_when_turned_off(world: World) -> None:
    world.t.set_preferences("bob", {
        "email": {"address": "bob@example.org", "frequency": "never"},
        "channels": {"security": {"email": False}, "general": {"email": False}}})
    world.publish("mention", "alice", "bob", payload={"text": "quiet"})
    world.publish("security", "system", "bob")
    assert [m["Subject"] for m in world.mails("bob@example.org")] == [
        "New sign-in to your account"]


def test_bounce_stops_mail_but_not_the_web(world: World) -> None:
    bob = world.user("bob")
    world.t.report_bounce("Bob@Example.org")
    world.publish("mention", "alice", "bob", payload={"text": "x"})
    assert world.mails(bob) == []
    assert world.t.unread_count("bob").count == 1
    world.t.clear_bounce(bob)
    world.publish("mention", "alice", "bob", payload={"text": "y"})
    assert len(world.mails(bob)) == 1


def test_no_header_injection(world: World) -> None:
    bob = world.user("bob")
    world.publish("mention", "alice", "bob",
                  payload={"text": "hi\r\nBcc: eve@evil.example\r\nX-Evil: 1"})
    (mail,) = world.sink.wait_for(1)
    assert mail["Bcc"] is None and mail["X-Evil"] is None
    assert "\n" not in mail["Subject"] and "\r" not in mail["Subject"]
    assert world.sink.recipients == [[bob]]


# RFC 2047 encoded-words in text a user wrote: decoded, they would end the header block
HOSTILE = ("=?utf-8?q?Hi=0D=0AReply-To:_attacker@evil.example=0D=0A=0D=0A"
           "<h1>Your_password_expired</h1>?=")
MAIL_HEADERS = ["From", "To", "Subject", "Message-ID", "Auto-Submitted", "List-Unsubscribe",
                "List-Unsubscribe-Post", "MIME-Version", "Content-Type"]


def _only(world: World) -> EmailMessage:
    try:
        (mail,) = world.sink.wait_for(1)
    finally:
        world.t.close()
    raw = world.sink.raw[0]
    assert b"Reply-To" not in raw.split(b"\r\n\r\n", 1)[0]
    assert [name for name, _ in mail.items()] == MAIL_HEADERS
    assert not mail.defects and not any(mail[name].defects for name in mail)
    assert world.sink.recipients == [["bob@example.org"]]
    assert mail["To"] == "bob@example.org"
    assert mail.get_content_type() == "multipart/alternative"
    assert "<h1>" not in html_of(mail)
    assert "https://wiki.example.org/v1/unsubscribe/" in text_of(mail)
    return mail


@pytest.mark.parametrize("frequency", ["immediate", "daily"])
def test_encoded_words_in_payload_text_are_sent_as_text(mail_store: str, sink: SmtpSink,
                                                        frequency: str) -> None:
    """Payload text that looks like encoded-words (in the subject of a mail, listed in a
    digest) arrives as that literal text, in exactly our headers, and the body is ours."""
    world = World(mail_store, sink)
    world.user("bob", frequency)
    world.publish("mention", "alice", "bob", payload={"text": f"{HOSTILE} and Köln"})
    world.advance(9 * HOUR)
    mail = _only(world)
    expected = "alice mentioned you: " + HOSTILE + " and Köln"
    subject = expected if frequency == "immediate" else "Your daily notifications: 1 new"
    assert mail["Subject"] == subject
    assert expected in text_of(mail) and "Your_password_expired" in html_of(mail)


def test_an_encoded_word_in_the_senders_name_is_sent_as_text(mail_store: str,
                                                             sink: SmtpSink) -> None:
    world = World(mail_store, sink, mail_from=f'"{HOSTILE} x" <wiki@example.org>')
    world.user("bob")
    world.publish("mention", "alice", "bob", payload={"text": "hi"})
    mail = _only(world)
    # RFC 2047 6.2: the space between two encoded-words is not text (the standard library's
    # address parser keeps it; its older decode_header follows the RFC)
    sender = str(make_header(decode_header(raw_headers(sink.raw[0])["From"])))
    assert sender == f"{HOSTILE} x <wiki@example.org>"
    assert mail["From"].addresses[0].addr_spec == "wiki@example.org"
    assert mail["Subject"] == "alice mentioned you: hi"


def test_retraction_cancels_unsent_mail_and_pending_windows(world: World) -> None:
    bob = world.user("bob")
    dave = world.user("dave", "daily")
    first = world.t.publish(Event("mention", actor="alice", recipients=["bob"],
                                  payload={"text": "oops"}))
    world.t.run_jobs(max_jobs=1)  # fan-out only: the mail job is queued, not sent
    world.t.retract(event_id=first.id)
    world.t.run_jobs()
    assert world.mails(bob) == []
    world.publish("page-linked", "alice", "bob", object="page:X")
    world.publish("page-linked", "carol", "bob", object="page:X")  # waits in the window
    world.publish("mention", "carol", "dave", payload={"text": "for the digest"})
    world.t.retract(actor="carol")
    with world.t.store.db.read() as conn:
        assert conn.execute(select(email_batch)).all() == []
    world.advance(24 * HOUR)
    assert [m["Subject"] for m in world.mails(bob)] == ["X was linked by alice"]
    assert world.mails(dave) == []


def test_deleting_a_notification_cancels_that_recipients_unsent_mail(world: World) -> None:
    """One recipient deletes a notification before its mail went out: no mail for them (the
    queued immediate mail, the bundling window, the digest), while others get theirs."""
    bob, bobby, carol = world.user("bob"), world.user("bobby"), world.user("carol")
    dave, erin = world.user("dave", "daily"), world.user("erin", "daily")
    first = world.t.publish(Event("mention", actor="alice", recipients=["bob", "bobby", "carol"],
                                  payload={"text": "hello"}))
    world.t.run_jobs(max_jobs=1)  # fan-out only: the mail jobs are queued, not sent
    world.t.delete_notification("bob", first.id)  # bobby's id starts with bob's: untouched
    world.t.run_jobs()
    assert world.mails(bob) == []
    assert len(world.mails(bobby)) == len(world.mails(carol)) == 1

    for actor in ("alice", "dave"):  # the first is mailed, the second waits in the window
        world.t.publish(Event("page-linked", actor=actor, object="page:X",
                              recipients=["bob", "carol"]))
        world.t.run_jobs()
    waiting = world.t.publish(Event("page-linked", actor="erin", object="page:X",
                                    recipients=["bob", "carol"]))
    world.t.run_jobs()
    world.t.delete_notification("bob", waiting.id)
    digest = world.t.publish(Event("mention", actor="alice", recipients=["dave", "erin"],
                                   payload={"text": "for the digest"}))
    world.t.run_jobs()
    world.t.delete_notification("dave", digest.id)
    world.advance(24 * HOUR)

    assert [m["Subject"] for m in world.mails(bob)] == [
        "X was linked by alice", "X was linked by dave"]  # erin's link left the window
    assert [m["Subject"] for m in world.mails(carol)][1:] == [
        "X was linked by alice", "X was linked by erin and 1 other"]
    assert world.mails(dave) == []
    assert len(world.mails(erin)) == 1


def test_every_smtp_send_shares_one_verifying_tls_context() -> None:
    """Made once a process, for the sends that use TLS (SMTPS, STARTTLS), and it checks the
    server's certificate and name."""
    context = tls_context()
    assert context is tls_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_smtp_failure_is_retried_and_logged(mail_store: str) -> None:
    require("SMTP test server (aiosmtpd)", check_aiosmtpd)
    sink = SmtpSink()
    world = World(mail_store, sink, job_backoff_seconds=1.0)
    bob = world.user("bob")
    world.publish("mention", "alice", "bob", payload={"text": "later"})  # no server listening
    failures = world.t.queue.failures()
    assert failures and "refused" in failures[0].error.lower()
    with sink:
        world.advance(5)
        assert len(sink.to(bob)) == 1
    with world.t.store.db.read() as conn:
        assert conn.execute(select(jobs)).all() == []
        assert len(conn.execute(select(email_log)).all()) == 1
    world.t.close()
