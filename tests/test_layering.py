"""The layering of the package: each part imports only from itself and the parts below it, and
the CLI reaches the index and the team index only through their fronts, ``xcsh_store.index``
and ``xcsh_store.team``.

The parts, from the bottom: the leaves (errors, files, homes, lazy, paths, js, times); format/;
history/, artifacts/ and agents/ (other agents' formats) over format; session/ over format,
history and artifacts; index/ over session, format, history and agents; watch/ (the live index)
over the index; web/ (the local web app) over the index and watch; agent_tools/ (the MCP
server) over the index; team/ (the PostgreSQL team index, the Parquet export) over the index;
secrets/ (finding and redacting secrets in session text) over the index, beneath web/,
agent_tools/ and team/, which redact what they send; cli/ over everything, reaching team/
through its front. The top-level ``xcsh_store`` re-exports the public API from the parts below
the CLI; ``python -m xcsh_store`` runs the CLI.
Every import counts, also one inside a function or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import xcsh_store

PACKAGE = Path(xcsh_store.__file__).resolve().parent
LEAVES = {"errors", "files", "homes", "lazy", "paths", "js", "times"}

# The parts each part may import from, besides itself.
BELOW = {
    "leaves": set(),
    "format": {"leaves"},
    "history": {"leaves", "format"},
    "artifacts": {"leaves", "format"},
    "agents": {"leaves", "format"},
    "session": {"leaves", "format", "history", "artifacts"},
    "index": {"leaves", "format", "history", "session", "agents"},
    "watch": {"leaves", "format", "history", "session", "agents", "index"},
    "secrets": {"leaves", "format", "history", "session", "agents", "index"},
    "web": {
        *("leaves", "format", "history", "artifacts", "session", "agents", "index", "watch"),
        "secrets",
    },
    "agent_tools": {
        *("leaves", "format", "history", "artifacts", "session", "agents", "index", "secrets"),
    },
    "team": {"leaves", "format", "history", "session", "agents", "index", "secrets"},
    "api": {"leaves", "format", "history", "artifacts", "session", "index"},
    "cli": {
        *("leaves", "format", "history", "artifacts", "session", "index", "api", "agents"),
        *("watch", "web", "agent_tools", "team", "secrets"),
    },
    "main": {"cli"},
}

# Arrows that break the rule today, each with the change that removes it. Once that change is
# merged, test_every_known_violation_is_still_there names the arrows to delete from here; the
# aim is an empty set.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = ("xcsh_store", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def part_of(module: str) -> str | None:
    """The part a module of the package belongs to; None for one outside every part."""
    if module == "xcsh_store":
        return "api"
    if module == "xcsh_store.__main__":
        return "main"
    first = module.split(".")[1]
    if first in LEAVES:
        return "leaves"
    return first if first in BELOW and first not in {"leaves", "api", "main"} else None


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules of the package an import statement of ``module`` reads."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    source = node.module or ""
    if node.level:
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        source = f"{base}.{source}" if source else base
    for alias in node.names:
        # `from xcsh_store.index import scan` reads the submodule scan, not the front.
        submodule = f"{source}.{alias.name}"
        yield submodule if submodule in MODULES else source


@functools.cache
def arrows() -> frozenset[tuple[str, str]]:
    """Every (importer, imported) pair between modules of the package."""
    found = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for imported in _imported(module, node):
                    if imported.split(".")[0] == "xcsh_store" and imported != module:
                        found.add((module, imported))
    return frozenset(found)


def breaks_the_rule(importer: str, imported: str) -> bool:
    above, below = part_of(importer), part_of(imported)
    assert above is not None and below is not None
    if above == "cli" and imported.startswith(("xcsh_store.index.", "xcsh_store.team.")):
        return True
    return above != below and below not in BELOW[above]


def test_every_module_belongs_to_a_part():
    assert [module for module in MODULES if part_of(module) is None] == []


def test_imports_run_downward_only():
    violations = {arrow for arrow in arrows() if breaks_the_rule(*arrow)}
    new = sorted(violations - KNOWN_VIOLATIONS)
    assert new == [], "\n".join(
        f"{importer} ({part_of(importer)}) imports {imported} ({part_of(imported)})"
        for importer, imported in new
    )


def test_every_known_violation_is_still_there():
    """A fixed arrow leaves KNOWN_VIOLATIONS, so that it cannot come back unnoticed."""
    gone = sorted(arrow for arrow in KNOWN_VIOLATIONS if arrow not in arrows())
    assert gone == [], f"fixed: delete from KNOWN_VIOLATIONS {gone}"


def test_the_rule_reads_every_kind_of_import():
    found = arrows()
    assert ("xcsh_store.__main__", "xcsh_store.cli") in found  # from a package: its front
    assert ("xcsh_store.cli.app", "xcsh_store") in found  # from the top-level package
    assert ("xcsh_store.index", "xcsh_store.index.db") in found  # a submodule by name
    assert breaks_the_rule("xcsh_store.format.jsonl", "xcsh_store.session.manager")
    assert breaks_the_rule("xcsh_store.index.rows", "xcsh_store.artifacts.store")
    assert breaks_the_rule("xcsh_store.cli.app", "xcsh_store.index.db")
    assert not breaks_the_rule("xcsh_store.cli.app", "xcsh_store.index")
    assert not breaks_the_rule("xcsh_store.index.rows", "xcsh_store.session.context")
