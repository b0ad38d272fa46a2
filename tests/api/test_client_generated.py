"""The client is written once: ``_sync.py`` is what ``scripts/unasync.py`` makes of
``_async.py``, so a change to one half only fails here. And the client stays a thin HTTP
library: it imports nothing of the engine, the store or the web framework."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from parsing import parse

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "unasync.py"
PACKAGE = ROOT / "src" / "tidings" / "client"


def unasync(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, timeout=60, check=False)


def copies(tmp_path: Path) -> tuple[Path, Path]:
    source, target = tmp_path / "_async.py", tmp_path / "_sync.py"
    shutil.copy(PACKAGE / "_async.py", source)
    shutil.copy(PACKAGE / "_sync.py", target)
    return source, target


def test_the_sync_client_is_generated_from_the_async_one() -> None:
    checked = unasync("--check")
    assert checked.returncode == 0, checked.stderr


def test_the_check_fails_when_one_half_is_edited(tmp_path: Path) -> None:
    source, target = copies(tmp_path)
    with target.open("a", encoding="utf-8") as sync:  # the sync half edited by hand
        sync.write("\n\ndef extra() -> None:\n    pass\n")
    stale = unasync("--check", "--source", source, "--target", target)
    assert stale.returncode == 1
    assert "-    pass" in stale.stderr  # the diff shows what regenerating would take away
    assert "is stale: run scripts/unasync.py" in stale.stderr

    source, target = copies(tmp_path)
    text = source.read_text(encoding="utf-8")  # the async half edited alone
    source.write_text(text.replace("async def healthz(", "async def health("), encoding="utf-8")
    assert unasync("--check", "--source", source, "--target", target).returncode == 1
    assert unasync("--source", source, "--target", target).returncode == 0  # regenerating
    assert "    def health(self)" in target.read_text(encoding="utf-8")
    assert unasync("--check", "--source", source, "--target", target).returncode == 0


def test_what_the_rules_do_not_cover_is_refused(tmp_path: Path) -> None:
    source, target = copies(tmp_path)
    text = source.read_text(encoding="utf-8")
    source.write_text(text + "\n\nasync def later(x: Any) -> Any:\n    return await(x)\n",
                      encoding="utf-8")
    refused = unasync("--source", source, "--target", target)
    assert refused.returncode == 2
    assert "is still asynchronous: 'return await(x)'" in refused.stderr
    assert target.read_bytes() == (PACKAGE / "_sync.py").read_bytes()  # left as it was


def test_the_client_imports_only_httpx_anyio_and_itself() -> None:
    allowed = {"httpx", "anyio", "tidings.exceptions", "tidings.client"}
    outside = []
    for module in [*PACKAGE.glob("*.py"), PACKAGE.parent / "client_base.py"]:
        for node in ast.walk(parse(module)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            outside += [f"{module.name}: {name}" for name in names
                        if name.split(".")[0] not in sys.stdlib_module_names
                        and not any(name == ok or name.startswith(f"{ok}.") for ok in allowed)]
    assert outside == []
