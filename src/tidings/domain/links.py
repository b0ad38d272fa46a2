"""Which links a notification may carry: http(s) URLs and paths that stay on the site.

A notification's ``link`` comes from a template fed with event data, and ends up in an
``<a href>`` of the web inbox and of every email. Anything else a browser would follow —
``javascript:``, ``data:``, a scheme-relative ``//evil.example``, ``/\\evil.example`` (browsers
read the backslash as a slash), or a URL with whitespace or control characters, which browsers
strip or reinterpret — is refused, so the notification simply has no link.

A site names the origins its links may point to with ``TIDINGS_LINK_ORIGINS``
(``Config.link_origins``); an absolute link elsewhere is then dropped the same way, and a path
on the site is always kept.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from urllib.parse import urlsplit

LINK_LIMIT = 2048
_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# control, format (bidi overrides, zero-width), and every kind of space or line separator
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"})
# the ASCII characters of those categories (controls and the space): an ASCII URL needs no
# per-character lookup
_REFUSED_ASCII = re.compile(r"[\x00-\x20\x7f]")


def safe_link(url: str | None, allowed_origins: Collection[str] | None = None) -> str | None:
    """``url`` when a browser may follow it from a notification, else None.

    Accepted: a path on this site (``/wiki/Fog``, one leading slash) and an absolute ``http``
    or ``https`` URL without user info. With ``allowed_origins`` (``https://example.org``, …)
    an absolute URL must also be on one of those origins; None allows any host.
    """
    if not url or not isinstance(url, str) or len(url) > LINK_LIMIT:
        return None
    if "\\" in url or _REFUSED_ASCII.search(url) is not None or (
            not url.isascii()
            and any(unicodedata.category(ch) in _REFUSED_CATEGORIES for ch in url)):
        return None
    if url.startswith("/"):
        return None if url.startswith("//") else url
    origin = _origin(url)
    if origin is None:
        return None
    if allowed_origins is not None and origin not in {_origin(o) for o in allowed_origins}:
        return None
    return url


def is_origin(text: str) -> bool:
    """Whether ``text`` is an origin: ``https://host`` or ``http://host:port``, with no user
    info, path (but ``/``), query or fragment."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return _origin(text) is not None and parts.path in ("", "/") and not parts.query \
        and not parts.fragment and "?" not in text and "#" not in text


def absolute_link(link: str | None, public_url: str,
                  allowed_origins: Collection[str] | None = None) -> str | None:
    """A safe link made absolute against ``public_url`` (for email), or None."""
    safe = safe_link(link, allowed_origins)
    if safe is None or not safe.startswith("/"):
        return safe
    return public_url.rstrip("/") + safe


def _origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an absolute http(s) URL, with the host in IDNA form."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES or not url[len(scheme) + 1:].startswith("//"):
        return None
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return None
    try:
        host = parts.hostname.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    return scheme, host, port if port is not None else _DEFAULT_PORTS[scheme]
