"""Outgoing mail over SMTP (plain, STARTTLS or TLS), built so no header can be injected."""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formataddr, parseaddr
from urllib.parse import unquote, urlsplit

from tidings.exceptions import ConfigError


def one_line(text: str, limit: int = 250) -> str:
    """A header value: no CR, LF or other control characters can start a new header."""
    cleaned = "".join(" " if ord(ch) < 32 or ch == "\x7f" else ch for ch in text)
    return " ".join(cleaned.split())[:limit]


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
        message = EmailMessage()
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
