"""``TIDINGS_LINK_ORIGINS``: the origins a site's notification links may point to. Links to
other origins are dropped (the notification has no link), paths on the site are kept; unset,
any http(s) origin is allowed, as before the setting existed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from servers import LiveServer
from tidings.channels.email.compose import item
from tidings.config import Config
from tidings.domain.types import EventType, Templates
from tidings.domain.views import StoredEvent
from tidings.exceptions import ConfigError

pytest_plugins = ["servers"]

SITE = "https://wiki.example.org"
LINKED = EventType("linked", audience=("recipients",),
                   templates=Templates(title="see {{ payload.url }}", link="{{ payload.url }}"))
URLS = {  # the link as published -> the link a reader gets with LINK_ORIGINS = SITE
    "https://evil.example/login": None,
    "http://wiki.example.org/x": None,  # another scheme is another origin
    "https://wiki.example.org:8443/x": None,
    f"{SITE}/wiki/Fog": f"{SITE}/wiki/Fog",
    "https://WIKI.example.org/wiki/Fog": "https://WIKI.example.org/wiki/Fog",
    "/wiki/Fog": "/wiki/Fog",
}


def test_the_setting_is_read_and_checked() -> None:
    assert Config.from_env({}).link_origins is None
    config = Config.from_env({"TIDINGS_LINK_ORIGINS": f"{SITE}, https://cdn.example.org:8443/"})
    assert config.link_origins == (SITE, "https://cdn.example.org:8443/")
    for bad in ("wiki.example.org", "ftp://wiki.example.org", f"{SITE}/wiki",
                "https://user@wiki.example.org", f"{SITE}?a=1"):
        with pytest.raises(ConfigError, match="TIDINGS_LINK_ORIGINS"):
            Config.from_env({"TIDINGS_LINK_ORIGINS": bad})


@pytest.mark.parametrize("api_backend", ["sqlite"])
@pytest.mark.parametrize("origins", [(SITE,), None], ids=["site-only", "unset"])
def test_inbox_links_keep_to_the_sites_origins(start_server: Callable[..., LiveServer],
                                               origins: tuple[str, ...] | None) -> None:
    live = start_server(config={"link_origins": origins})
    live.tidings.define_type(LINKED)
    with live.http() as server:
        for url in URLS:
            response = server.post("/v1/events", json={
                "type": "linked", "recipients": ["bob"], "payload": {"url": url}})
            assert response.status_code == 202, response.text
    assert live.settled()
    with live.http(live.token("bob")) as bob:
        items = bob.get("/v1/me/notifications", params={"limit": 100}).json()["items"]
    got = {i["payload"]["url"]: i["link"] for i in items}
    expected = URLS if origins else {url: url for url in URLS}
    assert got == expected


def test_mailed_links_keep_to_the_sites_origins() -> None:
    config = Config(public_url=SITE, link_origins=(SITE,))
    for url, link in URLS.items():
        event = StoredEvent(id=1, type="linked", actor=None, object=None,
                            payload={"url": url}, recipients=[], exclude=[],
                            idempotency_key=None, body_hash="", created_at=0,
                            retracted_at=None)
        got = item(config, LINKED, event, [], 1, {})["link"]
        assert got == (SITE + link if link and link.startswith("/") else link), url
