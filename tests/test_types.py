"""The package's type hints hold: mypy (configured in pyproject.toml) finds no error, and what
the lazy package fronts offer at run time is what they show the checker."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FRONTS = (
    "xcsh_store/__init__.py",
    "xcsh_store/index/__init__.py",
    "xcsh_store/team/__init__.py",
    "xcsh_store/cli/__init__.py",
)


def imported_for_checkers(tree: ast.Module) -> dict[str, str]:
    """Name -> module for every ``from module import name`` under ``if TYPE_CHECKING:``."""
    imported = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                imported |= {alias.name: statement.module for alias in statement.names}
    return imported


@pytest.mark.parametrize("front", FRONTS)
def test_a_lazy_front_offers_at_run_time_what_it_shows_the_checker(front: str):
    tree = ast.parse((REPO / front).read_text(encoding="utf-8"))
    shown = imported_for_checkers(tree)
    package = importlib.import_module(front.removesuffix("/__init__.py").replace("/", "."))
    for name, module in shown.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name), name
    assert set(shown) <= set(dir(package))


def test_a_lazy_front_lists_its_names_but_those_imported_as_themselves():
    import xcsh_store.team

    assert "TeamIndex" in xcsh_store.team.__all__
    assert xcsh_store.team.TeamUnavailableError.__name__ == "TeamUnavailableError"
    assert "TeamUnavailableError" not in xcsh_store.team.__all__
    # A front's own names (imported when it is) are listed with the lazy ones.
    assert {"SessionIndex", "SessionFilter"} <= set(
        importlib.import_module("xcsh_store.index").__all__
    )


def test_a_lazy_front_refuses_a_name_it_does_not_offer():
    import xcsh_store.index

    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        xcsh_store.index.nothing_here  # noqa: B018


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
