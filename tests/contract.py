"""What ``/openapi.json`` declares, checked against real answers: which operation a path is,
and what in an answer (a status, a field) the document does not declare.

``Recorder`` is an httpx transport that keeps every exchange, so a test can drive the Python
client and check everything it saw afterwards.
"""

from __future__ import annotations

import re
from typing import Any

import httpx


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert error["message"] and "Traceback" not in error["message"]
    return error


class Recorder(httpx.HTTPTransport):
    """Keeps every exchange (method, path, status, JSON body or None) for the OpenAPI checks."""

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[tuple[str, str, int, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        body = None
        media = response.headers.get("content-type", "").split(";")[0].strip()
        if media in ("application/json", "application/problem+json") \
                and request.method != "HEAD":  # an answer to HEAD has no body
            response.read()
            body = response.json()
        self.exchanges.append((request.method, request.url.path, response.status_code, body))
        return response



def operation_of(spec: dict[str, Any], method: str, path: str) -> tuple[str, dict[str, Any]]:
    """The path template of ``spec`` that ``path`` matches (literal segments win)."""
    matches = []
    for template, operations in spec["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path) and method.lower() in operations:
            matches.append((template.count("{"), template, operations[method.lower()]))
    assert matches, f"{method} {path} is not in /openapi.json"
    _, template, operation = min(matches, key=lambda m: m[0])
    return template, operation


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def shape_problems(spec: dict[str, Any], schema: dict[str, Any], value: Any,
                   where: str = "") -> list[str]:
    """Keys of ``value`` the schema does not declare, or required ones it lacks (recursively)."""
    schema = _resolve(spec, schema)
    if "anyOf" in schema:
        options = [_resolve(spec, option) for option in schema["anyOf"]]
        if value is None:
            return [] if any(o.get("type") == "null" for o in options) else [f"{where}: null"]
        kind = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
        schema = next((o for o in options if o.get("type") == kind), options[0])
    problems = []
    if isinstance(value, dict) and "properties" in schema:
        declared = set(schema["properties"])
        problems += [f"{where}.{key}: not documented" for key in set(value) - declared]
        problems += [f"{where}.{key}: missing" for key in set(schema.get("required", ()))
                     - set(value)]
        for key in set(value) & declared:
            problems += shape_problems(spec, schema["properties"][key], value[key],
                                       f"{where}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems += shape_problems(spec, schema["items"], item, f"{where}[{index}]")
    return problems


def undocumented(spec: dict[str, Any], method: str, path: str, status: int,
                 body: Any) -> list[str]:
    """What in one answer ``/openapi.json`` does not declare (its status, its fields)."""
    template, operation = operation_of(spec, method, path)
    where = f"{method} {template} {status}"
    response = operation["responses"].get(str(status))
    if response is None:
        return [f"{where}: status not documented"]
    schema = response.get("content", {}).get("application/json", {}).get("schema")
    if body is None or schema is None:
        return []
    return [where + problem for problem in shape_problems(spec, schema, body)]


PROSE = ("description", "summary")


def removals(before: Any, after: Any, where: str = "") -> list[str]:
    """What ``after`` (an OpenAPI document) lost or changed of ``before``: every key of a
    mapping must stay with an unchanged value, where keys may be added (a new status, a
    description, a pattern); parameter lists are compared by name, so new parameters may be
    added; an ``enum`` may gain values after those it had (a new channel name); other lists
    must keep their length, compared item by item. Prose (``description``, ``summary``) must
    stay but may be reworded: it tells, it is not the shape."""
    if isinstance(before, dict) and isinstance(after, dict):
        problems = []
        for key, value in before.items():
            if key not in after:
                problems.append(f"{where}/{key}: removed")
            elif key in PROSE and isinstance(value, str) and isinstance(after[key], str):
                continue
            else:
                problems += removals(value, after[key], f"{where}/{key}")
        return problems
    if (isinstance(before, list) and isinstance(after, list) and where.endswith("/parameters")
            and all(isinstance(p, dict) and "name" in p for p in before + after)):
        named = {(p["name"], p.get("in")): p for p in after}
        return [problem for p in before for problem in (
            removals(p, named[(p["name"], p.get("in"))], f"{where}[{p['name']}]")
            if (p["name"], p.get("in")) in named else [f"{where}[{p['name']}]: removed"])]
    if (isinstance(before, list) and isinstance(after, list) and where.endswith("/enum")
            and after[:len(before)] == before):
        return []
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [problem for index, (old, new) in enumerate(zip(before, after, strict=True))
                for problem in removals(old, new, f"{where}[{index}]")]
    if before != after:
        return [f"{where}: {before!r} became {after!r}"]
    return []
