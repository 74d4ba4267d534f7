"""The package's type hints hold: mypy (configured in pyproject.toml) finds no error, and what
the lazy package fronts offer at run time is what they show the checker."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FRONTS = ("xcsh_store/__init__.py", "xcsh_store/index/__init__.py", "xcsh_store/team/__init__.py")


def lazily_offered(tree: ast.Module) -> set[tuple[str, str]]:
    """(module, name) for every name a front hands to ``lazy_exports``."""
    assigned = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    offered = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports":
            for argument in node.args[1:]:
                mapping = assigned.get(argument.id) if isinstance(argument, ast.Name) else argument
                assert isinstance(mapping, ast.Dict), ast.unparse(argument)
                for key, names in zip(mapping.keys, mapping.values, strict=True):
                    assert isinstance(key, ast.Constant) and isinstance(names, ast.Tuple)
                    offered |= {(key.value, name.value) for name in names.elts}
    return offered


def imported_for_checkers(tree: ast.Module) -> set[tuple[str, str]]:
    """(module, name) for every ``from module import name`` under ``if TYPE_CHECKING:``."""
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                imported |= {(statement.module, alias.name) for alias in statement.names}
    return imported


@pytest.mark.parametrize("front", FRONTS)
def test_a_lazy_front_shows_the_checker_every_name_it_offers(front: str):
    tree = ast.parse((REPO / front).read_text(encoding="utf-8"))
    assert imported_for_checkers(tree) == lazily_offered(tree)


def test_the_names_found_by_the_front_check(tmp_path: Path):
    front = tmp_path / "front.py"
    front.write_text(
        "if TYPE_CHECKING:\n    from a.b import C\n"
        "__getattr__, __dir__ = lazy_exports(__name__, {'a.b': ('C', 'D')})\n"
    )
    tree = ast.parse(front.read_text())
    assert lazily_offered(tree) - imported_for_checkers(tree) == {("a.b", "D")}


@pytest.mark.slow
def test_mypy_finds_no_error(tmp_path: Path):
    # A fresh cache: an error must not hide behind what an older run remembered.
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
