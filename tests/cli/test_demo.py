"""`tidings demo` runs for a few seconds and leaves bundles in a demo user's inbox; a second run
resumes the same world."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from live import free_port
from tidings.config import Config
from tidings.demo import VIEWERS
from tidings.engine import Tidings


def run_demo(data_dir: Path, port: int, seconds: float) -> str:
    """Run the demo to its end; its standard output."""
    result = subprocess.run(
        [sys.executable, "-m", "tidings.cli", "demo", "--data-dir", str(data_dir),
         "--port", str(port), "--duration", str(seconds), "--interval", "0.2",
         "--events", "40", "--seed", "3"],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_demo_serves_bundles_and_resumes(tmp_path: Path) -> None:
    port = free_port()
    out = run_demo(tmp_path, port, 4)
    assert f"http://127.0.0.1:{port}/" in out
    assert "sign in as bob" in out and "#token=" in out
    t = Tidings(Config(database_url=f"sqlite:///{tmp_path / 'tidings.db'}"))
    t.load_types()
    bundles = [item for user in VIEWERS for item in t.notifications(user, limit=100).items
               if item.count > 1]
    assert bundles, "the demo formed no bundle"
    assert any(" and " in item.title for item in bundles)
    first_events = t.get_event(1)
    total = sum(len(t.notifications(u, limit=100).items) for u in VIEWERS)
    t.close()
    run_demo(tmp_path, port, 2)  # the same world carries on
    t = Tidings(Config(database_url=f"sqlite:///{tmp_path / 'tidings.db'}"))
    t.load_types()
    assert t.get_event(1).id == first_events.id
    assert sum(len(t.notifications(u, limit=100).items) for u in VIEWERS) >= total
    t.close()


def test_demo_page_and_sign_in_list(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tidings.cli", "demo", "--data-dir", str(tmp_path), "--port",
         str(port), "--duration", "20", "--events", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                page = httpx.get(base + "/", timeout=1)
                break
            except httpx.TransportError:
                import time

                time.sleep(0.1)
        else:
            raise AssertionError("the demo did not start")
        assert "<tidings-bell" in page.text
        users = httpx.get(base + "/demo/users").json()["items"]
        bob = next(u for u in users if u["user"] == "bob")
        count = httpx.get(base + "/v1/me/notifications/unread-count",
                          headers={"Authorization": f"Bearer {bob['token']}"})
        assert count.status_code == 200 and "display" in count.json()
        # Web Push on, with the demo's own key: "Enable push" in the preferences shows
        key = httpx.get(base + "/v1/push/public-key",
                        headers={"Authorization": f"Bearer {bob['token']}"})
        assert key.status_code == 200 and len(key.json()["public_key"]) == 87
        types = httpx.get(base + "/v1/types",
                          headers={"Authorization": f"Bearer {bob['token']}"}).json()
        assert "push" in types["enabled_channels"]
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode is not None


def test_demo_on_a_busy_port_says_so_before_anything_else(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "tidings.cli", "demo", "--data-dir", str(tmp_path),
             "--port", str(port), "--duration", "2"],
            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert f"127.0.0.1:{port}" in result.stderr and "--port" in result.stderr
    assert "sign in as" not in result.stdout
    assert not (tmp_path / "tidings.db").exists(), "nothing is set up before the port is ours"


def test_demo_logs_each_published_event_and_reaches_the_viewers(tmp_path: Path) -> None:
    out = run_demo(tmp_path, free_port(), 4)
    lines = [line for line in out.splitlines() if " page:" in line or " → " in line]
    assert len(lines) >= 5, out[-2000:]
    assert any(viewer in line.split("→")[-1] for line in lines if "→" in line
               for viewer in VIEWERS)
