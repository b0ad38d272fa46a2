"""The deployment guide's files (``deploy/``, quoted in docs/deploy.md): the guide quotes each
verbatim; the settings file is a valid configuration; systemd accepts the units; nginx and
Caddy accept their files, and a real nginx and a real Caddy, run from those files, pass the
event stream of a real server through as it comes. nginx and Caddy are Debian's
(``scripts/_proxies.sh`` installs them): missing, these tests skip, or fail under CI=true."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from backends import require
from live import free_port
from servers import SERVER_KEY, LiveServer
from tidings.config import Config

pytest_plugins = ["servers"]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
GUIDE = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
FILES = sorted(path.name for path in DEPLOY.iterdir())
UNITS = ["tidings.service", "tidings-worker.service"]
INSTALLED = "/opt/tidings/venv/bin/tidings"  # where the units expect tidings
NGINX = os.environ.get("TIDINGS_NGINX", "/usr/sbin/nginx")
CADDY = os.environ.get("TIDINGS_CADDY", "/usr/bin/caddy")
SYSTEMD_ANALYZE = "/usr/bin/systemd-analyze"


def text(name: str) -> str:
    return (DEPLOY / name).read_text(encoding="utf-8")


def _executable(path: str) -> None:
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{path} is missing")


@pytest.mark.parametrize("name", FILES)
def test_the_guide_quotes_each_file_verbatim(name: str) -> None:
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", GUIDE, flags=re.M | re.S)
    assert text(name) in blocks, f"docs/deploy.md does not quote deploy/{name} as it is"


def test_the_settings_file_is_a_valid_configuration() -> None:
    env: dict[str, str] = {}
    for line in text("tidings.env").splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value[1:-1] if value[:1] == value[-1:] == '"' else value
    config = Config.from_env(env)
    assert config.database_url.startswith("postgresql://")
    assert config.cors_origins == ("https://www.example.org",)
    assert config.mail_from == "Example <notifications@example.org>"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(f"`{key}`" in readme for key in env), "a setting the README does not name"


@pytest.mark.parametrize("unit", UNITS)
def test_systemd_accepts_the_units(unit: str, tmp_path: Path) -> None:
    require("systemd-analyze", lambda: _executable(SYSTEMD_ANALYZE), where=SYSTEMD_ANALYZE)
    source = text(unit)
    assert source.count(INSTALLED) == 1
    # systemd checks that the command exists: this checkout's tidings stands in for it
    tidings = Path(sys.executable).parent / "tidings"
    (tmp_path / unit).write_text(source.replace(INSTALLED, str(tidings)), encoding="utf-8")
    verified = subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", str(tmp_path / unit)],
                              capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0 and not verified.stderr.strip(), verified.stderr
    subcommand = "serve" if unit == "tidings.service" else "worker"
    line = next(ln for ln in source.splitlines() if ln.startswith("ExecStart="))
    options = line.split(f"{INSTALLED} {subcommand} ", 1)[1].split()
    helped = subprocess.run([str(tidings), subcommand, "--help"], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    for option in (o for o in options if o.startswith("--")):
        assert option in helped.stdout, f"`tidings {subcommand}` takes no {option}"


def nginx_config(tmp_path: Path, listen: int, upstream: int) -> Path:
    """deploy/nginx.conf as a site of a whole nginx configuration of its own (its files in
    ``tmp_path``), listening on ``listen`` and passing to ``upstream``."""
    site = text("nginx.conf")
    assert site.count("listen 80;") == 1 and site.count("server 127.0.0.1:8000;") == 1
    site = site.replace("listen 80;", f"listen 127.0.0.1:{listen};").replace(
        "server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};")
    (tmp_path / "site.conf").write_text(site, encoding="utf-8")
    main = tmp_path / "nginx.conf"
    main.write_text(f"""
worker_processes 1;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/body;
    proxy_temp_path {tmp_path}/proxy;
    fastcgi_temp_path {tmp_path}/fastcgi;
    uwsgi_temp_path {tmp_path}/uwsgi;
    scgi_temp_path {tmp_path}/scgi;
    include {tmp_path}/site.conf;
}}
""", encoding="utf-8")
    return main


@pytest.fixture
def nginx_ready() -> None:
    require("nginx", lambda: _executable(NGINX), where=NGINX, env="TIDINGS_NGINX")


@pytest.fixture
def caddy_ready() -> None:
    require("Caddy", lambda: _executable(CADDY), where=CADDY, env="TIDINGS_CADDY")


def test_nginx_accepts_the_site(nginx_ready: None, tmp_path: Path) -> None:
    config = nginx_config(tmp_path, free_port(), 8000)
    checked = subprocess.run([NGINX, "-t", "-e", "stderr", "-p", str(tmp_path), "-c",
                              str(config)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr


def caddy_config(tmp_path: Path, listen: int, upstream: int) -> Path:
    """deploy/Caddyfile on plain HTTP on ``listen`` (no certificate to fetch), passing to
    ``upstream``, its admin endpoint off."""
    site = text("Caddyfile")
    assert site.count("tidings.example.org {") == 1 and site.count("127.0.0.1:8000 {") == 1
    site = site.replace("tidings.example.org {", f"http://127.0.0.1:{listen} {{").replace(
        "127.0.0.1:8000 {", f"127.0.0.1:{upstream} {{")
    path = tmp_path / "Caddyfile"
    path.write_text("{\n\tadmin off\n}\n\n" + site, encoding="utf-8")
    return path


def caddy_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_caddy_accepts_the_caddyfile(caddy_ready: None, tmp_path: Path) -> None:
    checked = subprocess.run([CADDY, "validate", "--adapter", "caddyfile", "--config",
                              str(caddy_config(tmp_path, free_port(), 8000))],
                             capture_output=True, text=True, timeout=60,
                             env=caddy_env(tmp_path))
    assert checked.returncode == 0, checked.stderr
    formatted = subprocess.run([CADDY, "fmt", str(DEPLOY / "Caddyfile")], capture_output=True,
                               text=True, timeout=60, env=caddy_env(tmp_path))
    assert formatted.stdout == text("Caddyfile")  # written as Caddy formats it


@pytest.fixture
def proxied(request: pytest.FixtureRequest, tmp_path: Path,
            live: LiveServer) -> Iterator[tuple[str, LiveServer]]:
    """A real proxy from deploy/ in front of ``live``; yields the proxy's URL."""
    upstream = int(live.base_url.rsplit(":", 1)[1])
    listen = free_port()
    if request.param == "nginx":
        request.getfixturevalue("nginx_ready")
        config = nginx_config(tmp_path, listen, upstream)
        command = [NGINX, "-e", "stderr", "-p", str(tmp_path), "-c", str(config),
                   "-g", "daemon off;"]
        env: dict[str, str] | None = None
    else:
        request.getfixturevalue("caddy_ready")
        command = [CADDY, "run", "--adapter", "caddyfile", "--config",
                   str(caddy_config(tmp_path, listen, upstream))]
        env = caddy_env(tmp_path)
    proxy = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env=env)
    url = f"http://127.0.0.1:{listen}"
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proxy.poll() is not None or time.monotonic() > deadline:
                output = proxy.stdout.read().decode() if proxy.stdout else ""
                raise RuntimeError(f"{request.param} did not start: {output}")
            time.sleep(0.05)
        yield url, live
    finally:
        proxy.terminate()  # nginx and Caddy stop on SIGTERM (nginx: at once)
        try:
            proxy.wait(10)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait(10)


def frames(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    name = ""
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            yield name, json.loads(line[len("data: "):])


@pytest.mark.parametrize("api_backend", ["sqlite"])
@pytest.mark.parametrize("proxied", ["nginx", "caddy"], indirect=True)
def test_the_event_stream_passes_through_the_proxy_as_it_comes(
        proxied: tuple[str, LiveServer]) -> None:
    url, live = proxied
    token = live.token("bob")
    with httpx.Client(base_url=url, timeout=10) as http:
        ready = http.get("/readyz")
        assert ready.status_code == 200 and ready.headers.get("x-request-id")
        with http.stream("GET", "/v1/me/stream", params={"access_token": token},
                         headers={"Accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = frames(stream.iter_lines())
            name, data = next(events)
            assert name == "unread" and data["count"] == 0
            for round_ in range(2):  # each event arrives on its own, not when a buffer fills
                published = time.monotonic()
                answer = http.post("/v1/events", headers={"Authorization": f"Bearer {SERVER_KEY}"},
                                   json={"type": "mention", "actor": "alice",
                                         "recipients": ["bob"], "object": f"page:{round_}"})
                assert answer.status_code == 202, answer.text
                name, data = next(events)
                while name != "notification":
                    name, data = next(events)
                assert data["actor"] == "alice" and data["object"] == f"page:{round_}"
                assert time.monotonic() - published < 3.0
