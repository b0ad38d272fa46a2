"""A type declaration that could not be rendered or read back is a 422 over HTTP, and nothing is
stored: ``GET /v1/types`` keeps working for everyone. Through a real server on loopback."""

from __future__ import annotations

from typing import Any

import pytest

from contract import error_of
from servers import LiveServer

pytest_plugins = ["servers"]

BAD_TYPES = [
    # (request body, the field the error names)
    ({"templates": {"title": "{{ actor "}}, "templates.title"),
    ({"templates": {"body": "{% for x in %}{% endfor %}"}}, "templates.body"),
    ({"templates": {"link": "/{{ object|no_such_filter }}"}}, "templates.link"),
    ({"templates": {"locales": {"de": {"title": "{% if %}"}}}}, "templates.de.title"),
    ({"templates": {"title": "x" * 10_001}}, "templates.title"),
]


@pytest.mark.parametrize(("body", "field"), BAD_TYPES, ids=[f for _, f in BAD_TYPES])
def test_a_template_that_does_not_compile_is_a_422(shared_live: LiveServer, body: dict[str, Any],
                                                   field: str) -> None:
    with shared_live.http() as http:
        response = http.put("/v1/types/bad-type", json=body)
        listed = http.get("/v1/types")

    assert response.status_code == 422, response.text
    error = error_of(response)
    assert field in [detail["field"] for detail in error["details"]]
    assert listed.status_code == 200
    assert "bad-type" not in [t["name"] for t in listed.json()["items"]]


@pytest.mark.parametrize("body", [
    b'{"templates": {"title": "\\ud800"}}',
    b'{"templates": {"title": "ok", "locales": {"de": {"body": "a\\udfffb"}}}}',
])
def test_a_lone_surrogate_is_refused_and_never_stored(shared_live: LiveServer,
                                                      body: bytes) -> None:
    with shared_live.http() as http:
        response = http.put("/v1/types/bad-type", content=body,
                            headers={"content-type": "application/json"})
        listed = http.get("/v1/types")

    assert response.status_code == 422, response.text
    error_of(response)
    assert listed.status_code == 200
    assert "bad-type" not in [t["name"] for t in listed.json()["items"]]
