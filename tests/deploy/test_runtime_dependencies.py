"""What ships is what is tested: every third-party module that `app` and `models` import (at the top
of a module or inside a function, as grimp reads them) must come from a distribution named in
pyproject.toml's [project].dependencies, the only ones a plain `pip install .` and the image install.
A dev extra (httpx, pytest, ...) imported by the server would start in the suite and die in the image."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(requirements: list[str]) -> set[str]:
    return {canonical(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r.strip()).group()) for r in requirements}


def imported_third_party(*packages: str) -> dict[str, set[str]]:
    """Top-level name of each module outside `packages` and the standard library -> who imports it."""
    graph = grimp.build_graph(*packages, include_external_packages=True)
    ours = set(packages)
    found: dict[str, set[str]] = {}
    for module in graph.modules:
        top = module.split(".")[0]
        if top in ours or top in sys.stdlib_module_names:
            continue
        found.setdefault(top, set()).update(graph.find_modules_that_directly_import(module))
    return found


def undeclared(imported: dict[str, set[str]], requirements: list[str]) -> list[str]:
    allowed = declared(requirements)
    distributions = importlib.metadata.packages_distributions()
    problems = []
    for top, importers in sorted(imported.items()):
        names = {canonical(d) for d in distributions.get(top, [top])}
        if not names & allowed:
            by = ", ".join(sorted(importers))
            problems.append(f"{top} (from {', '.join(sorted(names))}) imported by {by}")
    return problems


def test_every_module_the_server_imports_is_a_runtime_dependency():
    imported = imported_third_party("app", "models")
    assert {"torch", "fastapi"} <= set(imported), "the import graph was not read"
    assert undeclared(imported, PROJECT["dependencies"]) == []


@pytest.mark.parametrize("dev_only", ["httpx", "pytest", "yaml"])
def test_a_dev_extra_imported_by_the_server_is_caught(dev_only):
    imported = {"torch": {"models.rnn"}, dev_only: {"app.services.ahead"}}
    [problem] = undeclared(imported, PROJECT["dependencies"])
    assert problem.startswith(f"{dev_only} (") and problem.endswith("imported by app.services.ahead")
