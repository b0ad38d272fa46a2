"""Outgoing mail over SMTP (plain, STARTTLS or TLS), built so no header can be injected.

Headers go out as written whenever they are printable ASCII, folded at spaces to 78 columns
(a longer word stays whole: RFC 5322 allows 998). Only non-ASCII text is RFC 2047-encoded. The
standard library's folding encodes any ASCII word that does not fit on a line, which turns
``List-Unsubscribe: <https://…>`` into an encoded-word no mail client reads (RFC 2369 headers
must not be encoded) and breaks one-click unsubscribe (RFC 8058).
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.policy import EmailPolicy
from email.utils import formataddr, parseaddr
from typing import Any
from urllib.parse import unquote, urlsplit

from tidings.exceptions import ConfigError


def one_line(text: str, limit: int = 250) -> str:
    """A header value: no CR, LF or other control characters can start a new header."""
    cleaned = "".join(" " if ord(ch) < 32 or ch == "\x7f" else ch for ch in text)
    return " ".join(cleaned.split())[:limit]


FOLD_AT = 78  # RFC 5322's recommended line length; 998 is the hard limit
LINE_LIMIT = 998


def fold_ascii(name: str, value: str) -> list[str] | None:
    """A header's lines, folded at spaces, or None if ``value`` is not printable ASCII (then
    it needs RFC 2047 encoding). The value is one line already (see :func:`one_line`)."""
    if not all(32 <= ord(ch) < 127 for ch in value):
        return None
    lines = [f"{name}:"]
    for word in value.split():
        if len(lines[-1]) + 1 + len(word) > FOLD_AT and lines[-1] != f"{name}:":
            lines.append("")
        lines[-1] += " " + word
    if any(len(line) > LINE_LIMIT for line in lines):
        raise ValueError(f"header {name} has a word longer than a mail line may be")
    return lines


# The standard library's encoded-words reach 76 characters at 78 columns, one over RFC 2047's
# 75; folding non-ASCII text two columns shorter keeps every word inside the limit.
_ENCODED = EmailPolicy(linesep="\r\n", max_line_length=FOLD_AT - 2)


class HeaderPolicy(EmailPolicy):
    """The default policy, except that ASCII headers are folded, never encoded."""

    def fold(self, name: str, value: Any) -> str:
        lines = fold_ascii(name, str(value))
        if lines is None:
            return str(_ENCODED.fold(name, value))
        return self.linesep.join(lines) + self.linesep

    def fold_binary(self, name: str, value: Any) -> bytes:
        lines = fold_ascii(name, str(value))
        if lines is None:
            return bytes(_ENCODED.fold_binary(name, value))
        return (self.linesep.join(lines) + self.linesep).encode("ascii")


POLICY = HeaderPolicy(linesep="\r\n")


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    text: str
    html: str
    message_id: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    mode: str  # "plain" | "starttls" | "tls"
    username: str | None
    password: str | None

    @classmethod
    def from_url(cls, url: str) -> SmtpSettings:
        """``smtp://host:port``, ``smtp+starttls://user:pass@host:587``, ``smtps://…:465``."""
        parts = urlsplit(url)
        modes = {"smtp": "plain", "smtp+starttls": "starttls", "smtps": "tls"}
        if parts.scheme not in modes or not parts.hostname:
            raise ConfigError("TIDINGS_SMTP_URL: use smtp://, smtp+starttls:// or "
                              f"smtps://host:port, got {url!r}")
        default_port = {"plain": 25, "starttls": 587, "tls": 465}[modes[parts.scheme]]
        return cls(parts.hostname, parts.port or default_port, modes[parts.scheme],
                   unquote(parts.username) if parts.username else None,
                   unquote(parts.password) if parts.password else None)


class SmtpMailer:
    """Hands one message at a time to an SMTP server."""

    def __init__(self, url: str, mail_from: str, timeout: float = 30.0) -> None:
        self.settings = SmtpSettings.from_url(url)
        name, address = parseaddr(mail_from)
        if "@" not in address:
            raise ConfigError(f"TIDINGS_MAIL_FROM: not an address: {mail_from!r}")
        self.mail_from = formataddr((one_line(name), address))
        self.envelope_from = address
        self.domain = address.split("@", 1)[1]
        self.timeout = timeout

    def build(self, mail: Mail) -> EmailMessage:
        message = EmailMessage(policy=POLICY)
        message["From"] = self.mail_from
        message["To"] = one_line(mail.to)
        message["Subject"] = one_line(mail.subject)
        message["Message-ID"] = one_line(mail.message_id)
        message["Auto-Submitted"] = "auto-generated"
        for name, value in mail.headers.items():
            message[one_line(name, 60)] = one_line(value, 900)
        message.set_content(mail.text)
        message.add_alternative(mail.html, subtype="html")
        return message

    def send(self, mail: Mail) -> None:
        message = self.build(mail)
        s = self.settings
        context = ssl.create_default_context()
        client: smtplib.SMTP
        if s.mode == "tls":
            client = smtplib.SMTP_SSL(s.host, s.port, timeout=self.timeout, context=context)
        else:
            client = smtplib.SMTP(s.host, s.port, timeout=self.timeout)
        with client:
            if s.mode == "starttls":
                client.starttls(context=context)
            if s.username:
                client.login(s.username, s.password or "")
            client.send_message(message, from_addr=self.envelope_from, to_addrs=[mail.to])
