"""Three unsubscribe links in every mail — this kind of notification (the category), this page
or thread (the object), all notification mail — each followed over real HTTP: the preference
changes, the next mail obeys, and Undo turns it back on. ``List-Unsubscribe`` (RFC 8058
one-click) is the category link. Forged, other-purpose and stale links get a 4xx and change
nothing. The API and the worker run as separate processes (real SMTP server, SQLite and
PostgreSQL)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest

from processes import WorkerProcess
from servers import TOKEN_SECRET, LiveServer, start
from smtp import SmtpSink
from tidings.channels.email import read_unsubscribe_token, unsubscribe_token
from tidings.domain.types import EventType, Templates

pytest_plugins = ["servers"]

TYPES = (
    EventType("mention", category="talk", channels=("web", "email"), audience=("recipients",),
              templates=Templates(title="{{ actor }} mentioned you on {{ object }}")),
    EventType("edit", category="edits", channels=("web", "email"), audience=("recipients",),
              templates=Templates(title="{{ actor }} edited {{ object }}")),
)
BOB = "bob@example.org"
LINE = {"category": r'No more mail about "[^"]+" notifications: (\S+)',
        "object": r"No more mail about this page or thread: (\S+)",
        "all": r"No notification mail at all: (\S+)"}


@dataclass
class Setup:
    live: LiveServer
    sink: SmtpSink
    http: httpx.Client

    def publish(self, type: str, object: str, actor: str = "alice") -> None:
        with self.live.client() as server:
            server.publish(type, actor=actor, object=object, recipients=["bob"])

    def mails(self) -> list[EmailMessage]:
        """Bob's mails once the worker has run every job."""
        assert self.live.settled(20)
        return self.sink.to(BOB)

    def prefs(self) -> dict[str, Any]:
        return self.live.tidings.get_preferences("bob")


@pytest.fixture
def setup(api_store_url: str, sink: SmtpSink, tmp_path: Path) -> Iterator[Setup]:
    with contextlib.ExitStack() as stack:
        live = start(stack, api_store_url, types=TYPES, run_worker=False)
        stack.enter_context(WorkerProcess(api_store_url, tmp_path, {
            "TIDINGS_SMTP_URL": sink.url, "TIDINGS_TOKEN_SECRET": TOKEN_SECRET,
            "TIDINGS_PUBLIC_URL": live.base_url, "TIDINGS_MAIL_FROM": "wiki@example.org"}))
        live.tidings.set_preferences("bob", {"email": {"address": BOB}})
        http = stack.enter_context(httpx.Client(base_url=live.base_url, timeout=10))
        yield Setup(live, sink, http)


def links(mail: EmailMessage) -> dict[str, str]:
    """The mail's unsubscribe links by purpose, as paths on the server."""
    body = mail.get_body(("plain",))
    assert body is not None
    text = str(body.get_content())  # type: ignore[attr-defined]
    found = {purpose: re.search(pattern, text) for purpose, pattern in LINE.items()}
    return {p: "/" + m[1].split("/", 3)[3] for p, m in found.items() if m}


def test_the_category_link_is_the_one_click_and_undo_restores_it(setup: Setup) -> None:
    setup.publish("mention", "page:A")
    (mail,) = setup.mails()
    paths = links(mail)
    assert set(paths) == {"category", "object", "all"}
    assert mail["List-Unsubscribe"].endswith(paths["category"] + ">")
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    for path in paths.values():  # no user in readable form
        token = path.rsplit("/", 1)[1]
        assert "bob" not in token and "Ym9i" not in token
    before = setup.prefs()
    page = setup.http.get(paths["category"])
    assert page.status_code == 200 and "“talk” notifications" in page.text
    assert setup.prefs() == before  # opening the page changes nothing
    done = setup.http.post(paths["category"], data={"List-Unsubscribe": "One-Click"})
    assert done.status_code == 200, done.text
    assert "You will no longer get email about “talk” notifications" in done.text
    assert 'action="' in done.text and "Undo" in done.text
    assert setup.prefs()["channels"] == {"talk": {"email": False}}
    setup.publish("mention", "page:B")  # talk: no mail
    setup.publish("edit", "page:B")  # edits still mail
    mails = setup.mails()
    assert [m["Subject"] for m in mails[1:]] == ["alice edited page:B"]
    assert setup.live.tidings.unread_count("bob").count == 3  # the web goes on
    action = re.search(r'action="([^"]+)"', done.text)
    assert action is not None
    undo = setup.http.post(httpx.URL(paths["category"]).join(action[1]).path)
    assert undo.status_code == 200 and "again" in undo.text
    assert setup.prefs()["channels"] == {"talk": {"email": True}}
    setup.publish("mention", "page:C")
    assert [m["Subject"] for m in setup.mails()[2:]] == ["alice mentioned you on page:C"]


def test_the_page_link_mutes_the_object_for_mail(setup: Setup) -> None:
    setup.publish("mention", "page:A")
    (mail,) = setup.mails()
    paths = links(mail)
    page = setup.http.get(paths["object"])
    assert page.status_code == 200 and "email about page:A" in page.text
    assert setup.http.post(paths["object"]).status_code == 200
    assert setup.prefs()["email"]["muted_objects"] == ["page:A"]
    setup.publish("edit", "page:A")  # another category, the same page: no mail
    setup.publish("mention", "page:B")
    assert [m["Subject"] for m in setup.mails()[1:]] == ["alice mentioned you on page:B"]
    assert setup.http.post(paths["object"] + "/undo").status_code == 200
    assert setup.prefs()["email"]["muted_objects"] == []
    setup.publish("edit", "page:A", actor="carol")
    assert [m["Subject"] for m in setup.mails()[2:]] == ["carol edited page:A"]


def test_the_all_link_stops_all_mail_and_undo_restores_the_frequency(setup: Setup) -> None:
    setup.publish("mention", "page:A")
    (mail,) = setup.mails()
    paths = links(mail)
    assert "any notification email" in setup.http.get(paths["all"]).text
    assert setup.http.post(paths["all"]).status_code == 200
    assert setup.prefs()["email"]["frequency"] == "never"
    setup.publish("mention", "page:B")
    setup.publish("edit", "page:C")
    assert len(setup.mails()) == 1
    assert setup.http.post(paths["all"] + "/undo").status_code == 200
    assert setup.prefs()["email"]["frequency"] == "immediate"
    setup.publish("edit", "page:D")
    assert [m["Subject"] for m in setup.mails()[1:]] == ["alice edited page:D"]


def test_forged_other_purpose_and_stale_links_change_nothing(setup: Setup) -> None:
    setup.publish("mention", "page:A")
    (mail,) = setup.mails()
    paths = links(mail)
    category = paths["category"].rsplit("/", 1)[1]
    sealed, _, code = category.rpartition(".")
    assert code == "1"  # 1 category, 2 object, 3 all
    flipped = sealed[:40] + ("A" if sealed[40] != "A" else "B") + sealed[41:]
    before = setup.prefs()
    refused = {
        "forged": f"{flipped}.1",
        "other purpose": f"{sealed}.3",
        "other purpose 2": f"{sealed}.2",
        "unknown purpose": f"{sealed}.4",
        "old format": "Ym9i.0123456789abcdef0123456789abcdef",
        "signed elsewhere": unsubscribe_token("another-secret-of-at-least-32-bytes!!", "bob",
                                              BOB, "category", "talk"),
    }
    for why, token in refused.items():
        for method, suffix in (("GET", ""), ("POST", ""), ("POST", "/undo")):
            answer = setup.http.request(method, f"/v1/unsubscribe/{token}{suffix}")
            assert answer.status_code == 404, (why, method, suffix, answer.text)
            assert answer.json()["error"]["code"] == "not_found"
    assert setup.prefs() == before
    # the address changes: the links of mails sent to the old one stop working
    setup.live.tidings.set_preferences("bob", {"email": {"address": "bob@new.example.org"}})
    before = setup.prefs()
    for path in paths.values():
        for method, suffix in (("GET", ""), ("POST", ""), ("POST", "/undo")):
            answer = setup.http.request(method, path + suffix)
            assert answer.status_code == 410, answer.text
            assert answer.json()["error"]["code"] == "link_expired"
            assert "address" in answer.json()["error"]["message"]
    assert setup.prefs() == before
    link = read_unsubscribe_token(TOKEN_SECRET, category)  # it was genuine
    assert (link.user, link.purpose, link.target) == ("bob", "category", "talk")


def test_tokens_of_the_longest_ids_fit_the_route() -> None:
    """User ids of 255 characters, categories of 64: within the route's 600."""
    pattern = re.compile(r"[A-Za-z0-9_-]+\.[0-9a-f]+")  # the route's, since v1
    for purpose, target in (("category", "c" * 64), ("object", str(2**62)), ("all", "weekly")):
        token = unsubscribe_token(TOKEN_SECRET, "u" * 255, "a" * 240 + "@example.org",
                                  purpose, target)
        assert len(token) <= 600 and pattern.fullmatch(token), (purpose, len(token))
        link = read_unsubscribe_token(TOKEN_SECRET, token)
        assert (link.user, link.purpose, link.target) == ("u" * 255, purpose, target)
