"""Outgoing mail over SMTP (plain, STARTTLS or TLS), built so no header can be injected.

The mailer writes every header it sets in its wire form itself (:class:`Wire`), and the policy
sends that form as it is, folded at spaces to 78 columns (a longer word stays whole: RFC 5322
allows 998). A word goes out as written when it is printable ASCII and cannot be read as an
RFC 2047 encoded-word; any other run of words is encoded (:func:`encode_text`). So text that
looks like an encoded-word (``=?utf-8?q?Hi=0D=0AReply-To:…?=`` in a title built from a payload)
arrives as that literal text: the standard library, given such a value, decodes it and writes
the decoded CR LF, which ends the header block there. And the standard library's folding
encodes any ASCII word that does not fit on a line, which turns ``List-Unsubscribe: <https://…>``
into an encoded-word no mail client reads (RFC 2369 headers must not be encoded) and breaks
one-click unsubscribe (RFC 8058).
"""

from __future__ import annotations

import functools
import itertools
import re
import smtplib
import ssl
from dataclasses import dataclass, field
from email.charset import Charset
from email.message import EmailMessage
from email.policy import EmailPolicy
from email.utils import parseaddr
from typing import Any
from urllib.parse import unquote, urlsplit

from tidings.exceptions import ConfigError


def one_line(text: str, limit: int = 250) -> str:
    """A header value: no CR, LF or other control characters can start a new header."""
    cleaned = "".join(" " if ord(ch) < 32 or ch == "\x7f" else ch for ch in text)
    return " ".join(cleaned.split())[:limit]


FOLD_AT = 78  # RFC 5322's recommended line length; 998 is the hard limit
LINE_LIMIT = 998
ENCODED_WORD_LIMIT = 75  # RFC 2047's longest encoded-word
_UTF8 = Charset("utf-8")
# RFC 5322 "specials": a display name holding one is sent as a quoted string
_SPECIALS = re.compile(r'[][\\()<>@,:;".]')
# an address the mailer writes as it is: printable ASCII, no spaces, no specials but the "@"
_ADDRESS = re.compile(r'[^][\\()<>@,:;"\s\x00-\x1f\x7f-\U0010ffff]+@[A-Za-z0-9.-]+')


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The verifying TLS context every send of this process shares (building one reads the
    system's CA certificates: tens of milliseconds of CPU); a plain send needs none."""
    return ssl.create_default_context()


class Wire(str):
    """A header value in its wire form: printable ASCII, one line, with RFC 2047 encoded-words
    only where the mailer put them. :class:`HeaderPolicy` sends it as it is, never parsing it
    (parsing would decode an encoded-word that came from a user's text)."""

    def __new__(cls, value: str) -> Wire:
        if not all(32 <= ord(ch) < 127 for ch in value):
            raise ValueError(f"not a header's wire form: {value!r}")
        return super().__new__(cls, value)


def _plain(word: str) -> bool:
    """Whether a word may go out as written: printable ASCII that no reader could take for
    (or a part of) an encoded-word."""
    return "=?" not in word and all(33 <= ord(ch) < 127 for ch in word)


def encoded_words(text: str) -> list[str]:
    """``text`` as UTF-8 encoded-words of at most 75 characters each."""
    lines = _UTF8.header_encode_lines(text, itertools.repeat(ENCODED_WORD_LIMIT))
    return [line for line in lines if line]


def encode_text(text: str) -> Wire:
    """Unstructured header text (RFC 5322) in wire form: plain words as written, every run of
    other words as encoded-words. The spaces inside a run are encoded with it (a reader drops
    the whitespace between two encoded-words)."""
    words: list[str] = []
    run: list[str] = []
    for word in [*one_line(text, len(text)).split(), ""]:  # "": the end
        if word and not _plain(word):
            run.append(word)
            continue
        if run:
            words += encoded_words(" ".join(run))
            run = []
        if word:
            words.append(word)
    return Wire(" ".join(words))


def mailbox(name: str, address: str) -> Wire:
    """``Name <address>`` in wire form: the name as written (quoted if it holds a special), or
    encoded whole when any of it must be."""
    if not _ADDRESS.fullmatch(address) or "=?" in address:
        raise ValueError(f"not a mail address the mailer can write: {address!r}")
    name = one_line(name)
    if not name:
        return Wire(address)
    if not all(_plain(word) for word in name.split()):
        phrase = " ".join(encoded_words(name))
    elif _SPECIALS.search(name):
        phrase = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    else:
        phrase = name
    return Wire(f"{phrase} <{address}>")


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
    """The default policy, except that a :class:`Wire` value is kept and sent as written, and
    ASCII headers are folded, never encoded."""

    def header_store_parse(self, name: str, value: Any) -> tuple[str, Any]:
        if isinstance(value, Wire):
            return (name, value)
        return super().header_store_parse(name, value)

    def header_fetch_parse(self, name: str, value: Any) -> Any:
        if isinstance(value, Wire):
            return value
        return super().header_fetch_parse(name, value)

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
        try:
            self.mail_from = mailbox(name, address)
        except ValueError as exc:
            raise ConfigError(f"TIDINGS_MAIL_FROM: {exc}") from None
        self.envelope_from = address
        self.domain = address.split("@", 1)[1]
        self.timeout = timeout

    def build(self, mail: Mail) -> EmailMessage:
        message = EmailMessage(policy=POLICY)
        message["From"] = self.mail_from
        message["To"] = mailbox("", mail.to)
        message["Subject"] = encode_text(one_line(mail.subject))
        message["Message-ID"] = Wire(one_line(mail.message_id))
        message["Auto-Submitted"] = Wire("auto-generated")
        for name, value in mail.headers.items():
            message[one_line(name, 60)] = encode_text(one_line(value, 900))
        message.set_content(mail.text)
        message.add_alternative(mail.html, subtype="html")
        return message

    def send(self, mail: Mail) -> None:
        message = self.build(mail)
        s = self.settings
        client: smtplib.SMTP
        if s.mode == "tls":
            client = smtplib.SMTP_SSL(s.host, s.port, timeout=self.timeout,
                                      context=tls_context())
        else:
            client = smtplib.SMTP(s.host, s.port, timeout=self.timeout)
        with client:
            if s.mode == "starttls":
                client.starttls(context=tls_context())
            if s.username:
                client.login(s.username, s.password or "")
            client.send_message(message, from_addr=self.envelope_from, to_addrs=[mail.to])
