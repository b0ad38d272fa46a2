"""Composing a notification mail: items rendered in the user's locale, the Jinja mail
templates, a Message-ID derived from the content, one-click unsubscribe headers."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from tidings.channels.email.smtp import Mail, SmtpMailer
from tidings.channels.email.tokens import signing_secret, unsubscribe_token
from tidings.config import Config
from tidings.domain.bundling import OTHERS_CAP
from tidings.domain.links import absolute_link
from tidings.domain.rendering import RenderContext, render_all
from tidings.domain.types import EventType
from tidings.domain.views import StoredEvent
from tidings.i18n import normalise_locale


@lru_cache(maxsize=1)
def _templates() -> Environment:
    return Environment(loader=PackageLoader("tidings.channels", "templates"),
                       autoescape=select_autoescape(["html"]), keep_trailing_newline=True)


def mailer(config: Config) -> SmtpMailer:
    if not config.smtp_url:
        raise RuntimeError("TIDINGS_SMTP_URL is not set")
    return SmtpMailer(config.smtp_url, config.mail_from)


def item(config: Config, event_type: EventType, event: StoredEvent, actors: list[str],
         count: int, prefs: Mapping[str, Any]) -> dict[str, Any]:
    """One listed notification of a mail: title, body and an absolute link."""
    others = min(max(len(actors) - 1, 0), OTHERS_CAP)
    ctx = RenderContext(type=event.type, actor=event.actor, object=event.object,
                        payload=event.payload, actors=actors[:3], count=count, others=others,
                        event_id=str(event.id))
    rendered = render_all(event_type, ctx, normalise_locale(prefs.get("locale")),
                          config.link_origins)
    return {"title": rendered.title, "body": rendered.body,
            "link": absolute_link(rendered.link, config.public_url, config.link_origins),
            "category": event_type.category, "object": event.object, "event_id": event.id,
            "mandatory": event_type.mandatory}


def unsubscribe_links(config: Config, user: str, address: str, frequency: str,
                      items: list[dict[str, Any]]) -> dict[str, str]:
    """The mail's unsubscribe links by purpose: ``all`` always; ``category`` when every item
    is of one category, ``object`` when every item is about one object (neither for a
    mandatory type, which they would not stop)."""
    secret = signing_secret(config)
    base = f"{config.public_url}/v1/unsubscribe/"
    links = {"all": base + unsubscribe_token(secret, user, address, "all", frequency)}
    if any(i.get("mandatory") for i in items):
        return links
    categories = {i.get("category") for i in items}
    category = categories.pop() if len(categories) == 1 else None
    if isinstance(category, str):
        links["category"] = base + unsubscribe_token(secret, user, address, "category",
                                                     category)
    objects = {i.get("object") for i in items}
    if len(objects) == 1 and None not in objects:  # the object by an event of it: short tokens
        event_id = str(items[0]["event_id"])
        links["object"] = base + unsubscribe_token(secret, user, address, "object", event_id)
    return links


@dataclass(frozen=True)
class Outbound:
    """A composed mail and what the sent log records of it."""

    user: str
    kind: str
    mail: Mail


def compose(config: Config, user: str, address: str, prefs: Mapping[str, Any], kind: str,
            key: str, *, subject: str, intro: str, items: list[dict[str, Any]],
            more: int) -> Outbound:
    domain = mailer(config).domain
    digest = hashlib.sha256(f"{user}\x00{key}".encode()).hexdigest()[:32]
    message_id = f"<{kind}.{digest}@{domain}>"
    frequency = (prefs.get("email") or {}).get("frequency", "immediate")
    links = unsubscribe_links(config, user, address, frequency, items)
    # one-click (RFC 8058) does the narrowest: this kind of notification, else all mail
    unsubscribe_url = links.get("category", links["all"])
    context = {"intro": intro, "items": items, "more": more, "unsubscribe_url": unsubscribe_url,
               "unsubscribe": links, "category": items[0].get("category") if items else None,
               "inbox_url": f"{config.public_url}/#/notifications", "frequency": frequency}
    env = _templates()
    mail = Mail(to=address, subject=subject, message_id=message_id,
                text=env.get_template("notification.txt").render(**context),
                html=env.get_template("notification.html").render(**context),
                headers={"List-Unsubscribe": f"<{unsubscribe_url}>",
                         "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"})
    return Outbound(user=user, kind=kind, mail=mail)
