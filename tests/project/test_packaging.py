"""A built wheel carries everything tidings reads at run time: web files, mail templates,
migrations, translations, the demo's types; and its licence."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NEEDED = ["tidings/api/web/app.js", "tidings/api/web/index.html", "tidings/api/web/tidings.css",
          "tidings/api/web/notifications.js", "tidings/api/web/404.html",
          "tidings/api/web/favicon.svg", "tidings/api/web/bell/bell.css",
          "tidings/api/web/bell/kit.js", "tidings/api/web/bell/element.js",
          "tidings/channels/templates/notification.html",
          "tidings/channels/templates/notification.txt", "tidings/demo/wiki.toml",
          "tidings/demo/web/wiki.js", "tidings/demo/web/wiki.css",
          "tidings/store/sql/migrations/versions/0001_initial.py", "tidings/py.typed",
          "tidings/locale/de/LC_MESSAGES/tidings.po"]


def test_the_wheel_holds_the_files_read_at_run_time(tmp_path: Path) -> None:
    # built from a copy of the tracked files: a build/ folder left in the checkout would
    # otherwise lend the wheel files the package data does not name
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    source = tmp_path / "source"
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
         str(source)], capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("tidings-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [name for name in NEEDED if name not in names] == []
    # the licence the metadata names travels with the wheel, as its own file
    (license_file,) = [name for name in names if ".dist-info/" in name
                       and name.rsplit("/", 1)[-1] == "LICENSE"]
    text = zipfile.ZipFile(wheel).read(license_file).decode()
    assert text.startswith("MIT License") and "tidings contributors" in text


def test_the_names_the_docs_use_import_from_tidings() -> None:
    """``from tidings import StoredEvent`` (a privacy rule's argument, docs/types.md) and every
    name of ``tidings.__all__`` import, lazily, as what they are."""
    import tidings
    from tidings import StoredEvent
    from tidings.domain.views import StoredEvent as Declared

    assert StoredEvent is Declared and "StoredEvent" in tidings.__all__
    for name in tidings.__all__:
        assert getattr(tidings, name).__name__ == name
