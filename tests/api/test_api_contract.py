"""The published contract only grows: every route ``docs/api.md`` names is served, with the
query parameters it names, and ``/openapi.json`` keeps everything of the v1 document
(``openapi_v1.json``, taken when v1 was published) — paths, operations, parameters, statuses,
schemas — adding to it at most."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from contract import removals

pytest_plugins = ["servers"]

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
BASELINE = Path(__file__).with_name("openapi_v1.json")
METHOD = r"(?:GET|POST|PUT|DELETE|PATCH)"
# "`GET /v1/types`", "`GET …/notifications?types=a,b&cursor=`", "`PUT` / `DELETE …/follows/{x}`"
ROUTE = re.compile(rf"`(?P<methods>{METHOD}(?:` / `{METHOD})*) (?P<path>(?:…|/)[^\s`?]*)"
                   rf"(?:\?(?P<query>[^\s`]*))?`")
USER_PREFIXES = ("/v1/users/{user}", "/v1/me")


def _documented() -> list[tuple[str, str, list[str]]]:
    """(method, path, query parameter names) of every route the page names."""
    routes = []
    for found in ROUTE.finditer(DOCS):
        path = found["path"]
        paths = [prefix + path[1:] for prefix in USER_PREFIXES] if path[0] == "…" else [path]
        query = [part.split("=")[0] for part in (found["query"] or "").split("&") if part]
        for method in found["methods"].split("` / `"):
            routes += [(method, p, query) for p in paths]
    return routes


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_the_docs_name_the_routes() -> None:
    routes = _documented()
    assert len({(m, p) for m, p, _ in routes}) >= 40, routes  # the parser still reads the page


@pytest.mark.parametrize(("method", "path", "query"), _documented(),
                         ids=[f"{m} {p}" for m, p, _ in _documented()])
def test_every_documented_route_is_served(openapi_spec: dict[str, Any], method: str, path: str,
                                          query: list[str]) -> None:
    served = {_shape(p): ops for p, ops in openapi_spec["paths"].items()}
    assert _shape(path) in served, f"{path} is not in /openapi.json"
    operation = served[_shape(path)].get(method.lower())
    assert operation is not None, f"{method} {path} is not in /openapi.json"
    declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    assert set(query) <= declared, f"{method} {path} does not declare {set(query) - declared}"


def test_the_openapi_document_only_adds_to_v1(openapi_spec: dict[str, Any]) -> None:
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    assert removals(baseline, openapi_spec) == []


def test_the_comparison_sees_removals_but_lets_prose_be_reworded() -> None:
    before = {"paths": {"/v1/x": {"get": {
        "description": "Old words.", "summary": "X",
        "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}},
                       {"name": "kind", "in": "query", "schema": {"enum": ["a", "b"]}}],
        "responses": {"200": {"description": "OK"}}}}}}
    reworded = json.loads(json.dumps(before))
    operation = reworded["paths"]["/v1/x"]["get"]
    operation["description"] = "New words."
    operation["responses"]["404"] = {"description": "Not found"}
    operation["parameters"][1]["schema"]["enum"].append("c")  # a value added
    assert removals(before, reworded) == []
    del operation["description"]
    operation["parameters"][0]["schema"]["type"] = "string"
    operation["parameters"][1]["schema"]["enum"] = ["b"]  # a value gone
    assert removals(before, reworded) == [
        "/paths//v1/x/get/description: removed",
        "/paths//v1/x/get/parameters[limit]/schema/type: 'integer' became 'string'",
        "/paths//v1/x/get/parameters[kind]/schema/enum: ['a', 'b'] became ['b']"]
