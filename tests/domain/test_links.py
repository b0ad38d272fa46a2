"""Which links a notification may carry (web inbox and email): http(s) URLs and paths that stay
on the site, nothing a browser would read as script, another host or something else. Pure."""

from __future__ import annotations

import pytest

from tidings.domain.links import LINK_LIMIT, absolute_link, safe_link

SAFE = [
    "/wiki/Fog", "/wiki/Fog?action=history#top", "/", "https://example.org",
    "https://example.org/wiki/Fog", "HTTPS://Example.org/x", "http://example.org:8080/x",
    "https://bücher.example/x",
]
UNSAFE = [
    "", "javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)",
    "\x00javascript:alert(1)", "java\tscript:alert(1)", "java\nscript:alert(1)",
    "data:text/html,<script>alert(1)</script>", "vbscript:msgbox(1)", "file:///etc/passwd",
    "ftp://example.org/", "mailto:a@example.org",
    "//evil.example", "//evil.example/wiki", "///evil.example", "/\\evil.example",
    "\\\\evil.example", "\\/evil.example", "/\t/evil.example", "/\n/evil.example",
    "/\r/evil.example", " //evil.example", "/wiki/Fog\u202e", "/wiki/\u200bFog",
    "/wiki/Fog Bar", "/wiki/Fog\u3000", "https:\\\\evil.example", "https:/evil.example",
    "https:evil.example", "https://", "https://example.org@evil.example/",
    "https://user:pw@example.org/", "https://exa mple.org/", "https://[::1/",
    "https://example.org:99999/", "wiki/Fog", "?q=1", "#top", "../wiki", "\ud800",
    "/" + "x" * LINK_LIMIT,
]


@pytest.mark.parametrize("url", SAFE)
def test_http_urls_and_site_paths_are_safe(url: str) -> None:
    assert safe_link(url) == url


@pytest.mark.parametrize("url", UNSAFE, ids=[repr(u)[:40] for u in UNSAFE])
def test_anything_else_is_refused(url: str) -> None:
    assert safe_link(url) is None
    assert safe_link(url, ["https://example.org"]) is None


@pytest.mark.parametrize(("url", "allowed"), [
    ("https://example.org/x", True),
    ("https://EXAMPLE.org:443/x", True),
    ("/x", True),
    ("http://example.org/x", False),          # another scheme is another origin
    ("https://example.org:8443/x", False),    # and so is another port
    ("https://example.org.evil.example/", False),
    ("https://evil.example/?https://example.org", False),
    ("https://www.bücher.example/", True),     # the same host, as IDNA
])
def test_allowed_origins_limit_absolute_urls(url: str, allowed: bool) -> None:
    origins = ["https://example.org", "https://www.xn--bcher-kva.example"]

    assert (safe_link(url, origins) == url) is allowed


def test_email_links_are_made_absolute_on_the_site() -> None:
    site = "https://wiki.example/"

    assert absolute_link("/wiki/Fog", site) == "https://wiki.example/wiki/Fog"
    assert absolute_link("https://example.org/x", site) == "https://example.org/x"
    assert absolute_link("//evil.example", site) is None
    assert absolute_link("javascript:alert(1)", site) is None
    assert absolute_link(None, site) is None
