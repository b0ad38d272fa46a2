"""docs/django.md, followed as a new user would: a Django project made by ``django-admin``, the
doc's own snippets written into it, ``manage.py migrate``, then Django's test runner with its
test client against real tidings (``django_site/blog_tests.py`` here) on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from backends import postgres_server, require, with_database
from engines import event_ids
from tidings.config import Config
from tidings.engine import Tidings


@pytest.fixture(autouse=True)
def _django() -> None:
    require("Django", lambda: __import__("django"))  # the test extra installs it

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "django.md"
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)
PLACE = re.compile(r"(?:# |<!-- )(\S+?)( \(add at the end\))?(?: -->)?\n")


def snippets() -> list[tuple[str, str, bool]]:
    """(path, text, append) of every fenced block of the doc that names its file."""
    found = []
    for _lang, body in FENCE.findall(DOC.read_text(encoding="utf-8")):
        head = PLACE.match(body)
        if head:
            found.append((head.group(1), body, bool(head.group(2))))
    return found


def run(site: Path, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, *args], cwd=site, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def build(site: Path, env: dict[str, str], database: str | None = None) -> None:
    """The doc's steps 1-5 in ``site`` (``database``: Django's own, as a settings snippet),
    with a fast password hasher."""
    site.mkdir()
    run(site, "-m", "django", "startproject", "mysite", ".", env=env)
    run(site, "-m", "django", "startapp", "blog", env=env)
    for path, body, append in snippets():
        target = site / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if append:
            target.write_text(target.read_text(encoding="utf-8") + "\n" + body, encoding="utf-8")
        else:
            target.write_text(body, encoding="utf-8")
    with (site / "mysite" / "settings.py").open("a", encoding="utf-8") as settings:
        if database:
            settings.write(f"\nDATABASES = {database}\n")
        # Django's own advice for test settings: its default hasher spends about 0.6 s of CPU
        # on each password, and the tests here make some twenty users
        settings.write('\nPASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]\n')
    (site / "blog" / "tests.py").write_text(
        (ROOT / "tests" / "integrations" / "django_site" / "blog_tests.py").read_text(
            encoding="utf-8"),
        encoding="utf-8")


@pytest.fixture
def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TIDINGS_")}
    return {**clean, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture(scope="session")
def django_lts(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A directory holding Django 4.2 (the LTS), from the package index, to put before the
    installed Django on a project's path."""
    where = tmp_path_factory.mktemp("django-4.2")

    def install() -> None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--disable-pip-version-check", "--target", str(where),
                        "Django>=4.2,<4.3"], check=True, capture_output=True, timeout=300)

    require("Django 4.2 from the package index", install)
    return str(where)


def test_the_doc_names_every_file_it_asks_for() -> None:
    assert [p for p, _, _ in snippets()] == [
        "mysite/settings.py", "tidings.toml", "blog/models.py", "blog/views.py",
        "blog/templates/blog/home.html", "mysite/urls.py", "mysite/asgi.py"]


@pytest.mark.parametrize("django", ["installed", "4.2"])
def test_a_new_site_on_sqlite_migrates_tidings_beside_it_and_its_tests_pass(
        tmp_path: Path, env: dict[str, str], django: str, request: pytest.FixtureRequest) -> None:
    if django == "4.2":
        lts = request.getfixturevalue("django_lts")
        env = {**env, "PYTHONPATH": os.pathsep.join([lts, env["PYTHONPATH"]])}
        version = run(tmp_path, "-m", "django", "--version", env=env)
        assert version.startswith("4.2."), version
    site = tmp_path / "site"
    build(site, env)
    run(site, "manage.py", "makemigrations", "blog", env=env)
    said = run(site, "manage.py", "migrate", env=env)
    assert "tidings: schema of sqlite:///" in said
    own = site / "db.tidings.sqlite3"
    assert own.exists()
    with Tidings(Config(database_url=f"sqlite:///{own}")) as tidings:
        tidings.check_schema()  # at the head revision
        assert event_ids(tidings) == []
    env = {**env, "TIDINGS_DATABASE_URL": f"sqlite:///{tmp_path / 'tidings-test.db'}"}
    said = run(site, "manage.py", "test", "blog", "-v", "2", env=env)
    assert "Ran 8 tests" in said and "OK" in said


@pytest.fixture
def postgres() -> Iterator[str]:
    server = postgres_server()
    admin = create_engine(with_database(server, "postgres"), isolation_level="AUTOCOMMIT")
    require("PostgreSQL", lambda: admin.connect().close(), where=server,
            env="TIDINGS_TEST_POSTGRES_URL")
    name = f"dj_{secrets.token_hex(5)}"
    yield name
    with admin.connect() as conn:
        for db in (name, f"{name}_tidings", f"test_{name}", f"{name}_tt"):
            conn.execute(text(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))
    admin.dispose()


def test_a_site_on_postgresql_gets_a_tidings_database_of_its_own_and_its_tests_pass(
        tmp_path: Path, env: dict[str, str], postgres: str) -> None:
    from sqlalchemy import make_url
    server = make_url(postgres_server())
    database = repr({"default": {
        "ENGINE": "django.db.backends.postgresql", "NAME": postgres,
        "USER": server.username or "", "PASSWORD": server.password or "",
        "HOST": server.host or "127.0.0.1", "PORT": str(server.port or 5432)}})
    site = tmp_path / "site"
    build(site, env, database)
    admin = create_engine(with_database(postgres_server(), "postgres"),
                          isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{postgres}"'))
    run(site, "manage.py", "makemigrations", "blog", env=env)
    said = run(site, "manage.py", "migrate", env=env)
    assert f"/{postgres}_tidings is up to date" in said
    with Tidings(Config(database_url=with_database(postgres_server(),
                                                   f"{postgres}_tidings"))) as tidings:
        tidings.check_schema()
        assert event_ids(tidings) == []
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{postgres}_tt"'))
    admin.dispose()
    url = with_database(postgres_server(), f"{postgres}_tt")
    env = {**env, "TIDINGS_DATABASE_URL": url}
    said = run(site, "manage.py", "test", "blog", "-v", "2", env=env)
    assert "Ran 8 tests" in said and "OK" in said
