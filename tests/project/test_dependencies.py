"""Dependency floors that matter for security hold, in pyproject.toml and in the environment."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
# Jinja2 before 3.1.6 lets sandboxed templates escape (CVE-2024-56201, CVE-2024-56326,
# CVE-2025-27516); tidings renders templates that API callers define in the sandbox.
FLOORS = {"jinja2": ("3.1.5", "3.1.6")}  # the last release refused, the first accepted


def test_security_floors_are_required() -> None:
    dependencies = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    requirements = {Requirement(d).name.lower(): Requirement(d) for d in dependencies}
    for name, (refused, accepted) in FLOORS.items():
        specifier = requirements[name].specifier
        assert not specifier.contains(refused), f"{name} {specifier} allows {refused}"
        assert specifier.contains(accepted) and specifier.contains(version(name))
