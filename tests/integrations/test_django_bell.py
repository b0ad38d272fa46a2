"""The project of docs/django.md served for real: by ``manage.py runserver`` with its API under
``tidings serve`` on another origin (the bell in Chromium, a comment saved in Django reaching the
post author's bell through ``manage.py tidings_worker``), and by uvicorn with tidings mounted in
the site's own ASGI application, the Django session standing for the tidings user."""

# ruff: noqa: F811  (pytest fixtures imported from test_web)
from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from backends import require
from live import free_port
from test_django import build, env, run  # noqa: F401  (the env fixture)
from test_web import browser  # noqa: F401  (fixture)


@pytest.fixture(autouse=True)
def _django() -> None:
    require("Django", lambda: __import__("django"))  # the test extra installs it

SECRET = "change-me-to-a-long-random-secret"  # docs/django.md's settings default


def _up(url: str, process: subprocess.Popen[str]) -> None:
    for _ in range(300):
        if process.poll() is not None:
            raise AssertionError(f"{url}: exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            import time
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer")


@pytest.fixture
def servers(tmp_path: Path, env: dict[str, str]) -> Iterator[tuple[str, str, Path, dict[str, str]]]:
    site = tmp_path / "site"
    build(site, env)
    run(site, "manage.py", "makemigrations", "blog", env=env)
    run(site, "manage.py", "migrate", env=env)
    run(site, "manage.py", "shell", "-c",
        "from django.contrib.auth import get_user_model as g; from blog.models import Post; "
        "ann = g().objects.create_superuser('ann', password='pw'); "
        "g().objects.create_user('bob', password='pw'); "
        "Post.objects.create(author=ann, title='Hello')", env=env)
    api_port, site_port = free_port(), free_port()
    api = f"http://127.0.0.1:{api_port}"
    site_env = {**env, "TIDINGS_SERVER_URL": api}
    with ExitStack() as stack:
        tidings = subprocess.Popen(
            [sys.executable, "-m", "tidings.cli", "serve", "--port", str(api_port),
             "--no-worker"], cwd=site, text=True,
            env={**env, "TIDINGS_DATABASE_URL": f"sqlite:///{site / 'db.tidings.sqlite3'}",
                 "TIDINGS_TOKEN_SECRET": SECRET, "TIDINGS_API_KEY": "server-key",
                 "TIDINGS_TYPES_FILE": str(site / "tidings.toml")})
        stack.callback(tidings.wait, 20)
        stack.callback(tidings.terminate)
        django = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{site_port}", "--noreload"],
            cwd=site, env=site_env, text=True)
        stack.callback(django.wait, 20)
        stack.callback(django.terminate)
        _up(f"{api}/healthz", tidings)
        _up(f"http://127.0.0.1:{site_port}/admin/login/", django)
        yield f"http://127.0.0.1:{site_port}", api, site, site_env


def test_a_comment_saved_in_django_reaches_the_bell_on_a_django_page(
        browser: Any, servers: tuple[str, str, Path, dict[str, str]]) -> None:
    url, api, site, site_env = servers
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url + "/")
    page.fill("#id_username", "ann")  # the admin's login page (LOGIN_URL)
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_url(url + "/")
    bell = page.locator("tidings-bell")
    bell.wait_for()
    assert bell.get_attribute("api") == api

    run(site, "manage.py", "shell", "-c",
        "from django.contrib.auth import get_user_model as g; from blog.models import Comment, "
        "Post; Comment.objects.create(post=Post.objects.get(), "
        "author=g().objects.get(username='bob'), text='hi')", env=site_env)
    said = run(site, "manage.py", "tidings_worker", "--once", env=site_env)
    assert "tidings: ran" in said
    page.reload()
    page.locator("tidings-bell .badge").filter(has_text="1").wait_for(timeout=10_000)
    page.locator("tidings-bell .bell").click()
    page.locator("tidings-bell .item", has_text="bob commented on Hello").wait_for()
    assert errors == []
    context.close()


def test_the_site_serves_tidings_under_its_prefix_and_its_sign_in_is_the_user(
        tmp_path: Path, env: dict[str, str]) -> None:
    site = tmp_path / "site"
    build(site, env)
    run(site, "manage.py", "makemigrations", "blog", env=env)
    run(site, "manage.py", "migrate", env=env)
    run(site, "manage.py", "shell", "-c",
        "from django.contrib.auth import get_user_model as g; from blog.models import Comment, "
        "Post; ann = g().objects.create_superuser('ann', password='pw'); "
        "bob = g().objects.create_user('bob', password='pw'); "
        "Comment.objects.create(post=Post.objects.create(author=ann, title='Hello'), "
        "author=bob, text='hi')", env=env)
    run(site, "manage.py", "tidings_worker", "--once", env=env)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    served = {**env, "TIDINGS_SERVER_URL": "/notifications", "TIDINGS_API_KEY": "server-key"}
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "mysite.asgi:application", "--port", str(port)],
        cwd=site, env=served, text=True)
    try:
        _up(url + "/notifications/healthz", server)
        with httpx.Client(base_url=url) as http:
            assert http.get("/notifications/v1/me/notifications").status_code == 401
            assert http.get("/notifications/tidings-bell.js").status_code == 200
            form = http.get("/admin/login/")
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
            assert csrf is not None
            signed_in = http.post("/admin/login/?next=/", data={
                "csrfmiddlewaretoken": csrf.group(1), "username": "ann", "password": "pw"})
            assert signed_in.status_code == 302, signed_in.text
            mine = http.get("/notifications/v1/me/notifications")
            assert mine.status_code == 200, mine.text
            assert [i["title"] for i in mine.json()["items"]] == ["bob commented on Hello"]
            assert http.get("/notifications/v1/users/bob/notifications").status_code == 403
            home = http.get("/").text
            assert '<tidings-bell api="/notifications" token="' in home
            http.cookies.clear()
            assert http.get("/notifications/v1/me/notifications").status_code == 401
    finally:
        server.terminate()
        server.wait(20)
