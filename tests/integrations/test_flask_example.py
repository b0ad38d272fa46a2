"""``examples/flask_site.py`` (docs/mount.md, "Flask"): the Flask site, driven by Flask's test
client, talks to a real tidings server over HTTP through the Python client: a comment
notifies the people it mentions, a user reads their own inbox, the bell's token is the
signed-in user's and works against tidings, and what tidings refuses is the site's 4xx."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from backends import require
from servers import SERVER_KEY, LiveServer, wait_for

pytest_plugins = ["servers"]
pytestmark = pytest.mark.parametrize("api_backend", ["sqlite"])


@pytest.fixture(autouse=True)
def _flask() -> None:
    require("Flask", lambda: __import__("flask"))  # the test extra installs it

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "flask_site.py"


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flask_site", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def signed_in(site: Any, user: str) -> Any:
    browser = site.test_client()
    assert browser.post("/login", data={"user": user}).status_code == 302
    return browser


def test_the_flask_site_notifies_through_tidings(live: LiveServer) -> None:
    site = example().create_site(live.base_url, SERVER_KEY, "a secret of the site's")
    alice, bob = signed_in(site, "alice"), signed_in(site, "bob")
    assert site.test_client().get("/notifications").status_code == 401  # nobody signed in

    posted = alice.post("/comments", json={"page": "Fog", "mentions": ["bob"],
                                           "text": "see the fog"})
    assert posted.status_code == 201, posted.text
    assert wait_for(lambda: bob.get("/notifications").json["unread"] == "1")
    inbox = bob.get("/notifications").json
    assert [item["read"] for item in inbox["items"]] == [False]
    assert "alice" in inbox["items"][0]["title"]
    assert alice.get("/notifications").json == {"unread": "0", "items": []}
    assert bob.post("/notifications/read").json == {"updated": 1}
    assert bob.get("/notifications").json["unread"] == "0"

    token = bob.post("/bell-token").json["token"]
    with live.client(token) as bell:  # the bell's token: bob's, against tidings itself
        assert bell.unread_count()["count"] == 0
        assert [i["title"] for i in bell.notifications()["items"]] == \
            [inbox["items"][0]["title"]]
    page = bob.get("/").text
    assert f'<tidings-bell server="{live.base_url}" token="' in page
    assert f'<script src="{live.base_url}/tidings-bell.js">' in page

    refused = alice.post("/comments", json={"page": "Fog", "mentions": ["not a user!"],
                                            "text": "?"})
    assert refused.status_code == 422
    assert "recipients" in refused.json["error"]["message"]
