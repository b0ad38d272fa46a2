"""docs/client.md's example runs as written against a real, fresh server (no type declared,
the embedded worker fanning out in its own time) and prints what it says it prints."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from servers import SERVER_KEY, LiveServer, start
from stores import SqlStores

pytest_plugins = ["servers"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


@pytest.fixture
def fresh_server(sqlite_stores: SqlStores) -> Iterator[LiveServer]:
    url = sqlite_stores.clone()
    with contextlib.ExitStack() as stack:
        yield start(stack, url, types=())
    sqlite_stores.drop(url)


def test_the_client_example_runs_against_a_fresh_server(
        fresh_server: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    example = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert example is not None
    code = example.group(1)
    assert "http://127.0.0.1:8000" in code and '"server-key"' in code
    code = code.replace("http://127.0.0.1:8000", fresh_server.base_url).replace(
        '"server-key"', repr(SERVER_KEY))

    exec(compile(code, str(DOC), "exec"), {})  # the documentation's own code

    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "alice mentioned you"
    assert fresh_server.tidings.unread_count("bob").count == 0  # the example marked it read
