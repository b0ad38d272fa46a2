"""Every block of the README runs, as a new user would run it, so none can rot.

Each fenced block of README.md is found by the section it sits in and run:

- "Start here": ``scripts/demo`` (with ``--port``, ``--duration`` and ``--data-dir`` added so it
  stops by itself on a free port); ``scripts/test`` is the command running this very test.
- "Ten lines of Python": run in a fresh folder; each ``print`` prints what its comment says.
- "Over HTTP": run by bash in a fresh folder (``.venv`` linked to this checkout's virtualenv),
  port 8000 swapped for a free one; the last answer holds alice's mention.
- "Scaling out": each line run against a fresh PostgreSQL database (the URL swapped for it);
  ``tidings worker`` and ``tidings serve`` run until they have proved they work, then get SIGTERM.

A block in a section this file does not know fails ``test_every_block_has_a_runner``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from live import free_port
from stores import PostgresStores

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
RUNNERS = {("Start here", "sh"), ("Ten lines of Python", "python"), ("Over HTTP", "sh"),
           ("Scaling out", "sh")}


def blocks() -> list[tuple[str, str, str]]:
    """(section, language, code) of every fenced block, in order."""
    section = ""
    found = []
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("```") and len(line) > 3:
            language = line[3:].strip()
            end = lines.index("```", i + 1)
            found.append((section, language, "\n".join(lines[i + 1:end]) + "\n"))
            i = end
        i += 1
    return found


def block(section: str) -> str:
    (code,) = [code for name, _, code in blocks() if name == section]
    return code


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")}
    clean["PATH"] = f"{VENV_BIN}{os.pathsep}{clean.get('PATH', '')}"
    return clean


def test_every_block_has_a_runner() -> None:
    assert {(name, language) for name, language, _ in blocks()} == RUNNERS


def test_start_here_demo_runs(tmp_path: Path) -> None:
    (line,) = [line for line in block("Start here").splitlines()
               if line.startswith("scripts/demo")]
    command = line.split("#")[0].split()
    port = free_port()
    result = subprocess.run(
        [*command, "--port", str(port), "--duration", "3", "--data-dir", str(tmp_path)],
        cwd=ROOT, env=env(), capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"http://127.0.0.1:{port}/" in result.stdout and "sign in as" in result.stdout
    assert "scripts/test" in block("Start here")


def test_ten_lines_of_python_print_what_they_say(tmp_path: Path) -> None:
    code = block("Ten lines of Python")
    expected = [line.split("#", 1)[1].strip() for line in code.splitlines()
                if line.startswith("print(")]
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env(),
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout.splitlines()
    assert len(printed) == len(expected)
    for shown, said in zip(printed, expected, strict=True):
        assert said.startswith(shown), (shown, said)


def test_over_http_runs_as_written(tmp_path: Path) -> None:
    port = free_port()
    script = block("Over HTTP").replace("8000", str(port))
    (tmp_path / ".venv").symlink_to(VENV_BIN.parent)
    result = subprocess.run(["bash", "-eu", "-c", script], cwd=tmp_path, env=env(),
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    inbox = json.loads(result.stdout.strip().splitlines()[-1])
    (item,) = inbox["items"]
    assert item["type"] == "mention" and item["actor"] == "alice"
    assert "alice" in item["title"] and not item["title"].rstrip().endswith(" on")
    with pytest.raises(httpx.TransportError):  # `kill %1` stopped the server
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


@pytest.fixture
def postgres_url(postgresql_stores: PostgresStores) -> Iterator[str]:
    url = postgresql_stores.clone()
    yield url
    postgresql_stores.drop(url)


def _wait(until: float, check: object) -> None:
    while time.monotonic() < until:
        try:
            if check():  # type: ignore[operator]
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_scaling_out_runs_as_written(postgres_url: str) -> None:
    lines = [line.split("#")[0].strip() for line in block("Scaling out").splitlines()]
    exports = dict(re.findall(r"(\w+)=(\S+)", " ".join(line for line in lines
                                                      if line.startswith("export "))))
    assert set(exports) == {"TIDINGS_DATABASE_URL", "TIDINGS_API_KEY"}
    environment = {**env(), **exports, "TIDINGS_DATABASE_URL": postgres_url}
    commands = [line.split() for line in lines if line.startswith("tidings ")]
    assert [c[1] for c in commands] == ["migrate", "worker", "serve"]
    migrate, worker, serve = commands

    done = subprocess.run(migrate, env=environment, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    port = free_port()
    started = [subprocess.Popen(worker, env=environment, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True),
               subprocess.Popen([*serve, "--port", str(port)], env=environment,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)]
    try:
        base = f"http://127.0.0.1:{port}"
        key = {"Authorization": f"Bearer {exports['TIDINGS_API_KEY']}"}
        _wait(time.monotonic() + 60, lambda: httpx.get(base + "/readyz").status_code == 200)
        assert httpx.put(base + "/v1/types/mention", headers=key,
                         json={"audience": ["recipients"]}).status_code in (200, 201)
        assert httpx.post(base + "/v1/events", headers=key, json={
            "type": "mention", "actor": "alice", "recipients": ["bob"]}).status_code == 202
        _wait(time.monotonic() + 60, lambda: httpx.get(
            base + "/v1/users/bob/notifications", headers=key).json()["items"])
    finally:
        for process in started:
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=60) for process in started]
    assert codes == [0, 0], [p.stderr.read()[-2000:] if p.stderr else "" for p in started]
