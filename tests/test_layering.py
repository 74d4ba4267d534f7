"""The layering of the package: each part imports only from itself and the parts below it,
nothing imports in a circle inside a part, no package folder holds more than 15 modules side by
side, and the parts above the index reach it (the CLI the team index too) only through its
front, ``xcsh_store.index`` (``xcsh_store.team``).

The parts, from the bottom: the leaves (errors, files, homes, lazy, paths, js, sql_migrations,
times, user_cache); format/; history/, artifacts/ and agents/ (other agents' formats) over format;
session/ over format, history and artifacts; index/ over format, history and agents (its rooms:
write/, read/, upkeep/, under the store and database core at its top); watch/ (the live index) over
the index; secrets/ (finding and redacting secrets in session text) over the index, beneath web/,
agent_tools/ and team/, which redact what they send; web/ (the local web app) over the index and
watch; agent_tools/ (the MCP server) over the index; team/ (the PostgreSQL team index, the Parquet
export) over the index; demo/ (the sample agent dir of ``xcsh-store demo``) over the session, the
history, the artifacts and the index; cli/ over everything. The top-level ``xcsh_store`` re-exports
the public API from the parts below the CLI; ``python -m xcsh_store`` runs the CLI. Every import
counts, also one inside a function or under ``TYPE_CHECKING`` (where a lazy front names the modules
of its names: lazy.py). No test module imports another.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from pathlib import Path

from helpers.layers import APART, BELOW, LEAVES

import xcsh_store

PACKAGE = Path(xcsh_store.__file__).resolve().parent


# The parts that reach a part below them only through its package front: the parts above the
# index use ``xcsh_store.index`` and none of the modules under it; the CLI also the team
# index's ``xcsh_store.team``.
FRONTS = {
    "cli": ("xcsh_store.index", "xcsh_store.team"),
    "watch": ("xcsh_store.index",),
    "secrets": ("xcsh_store.index",),
    "web": ("xcsh_store.index",),
    "agent_tools": ("xcsh_store.index",),
    "team": ("xcsh_store.index",),
    "demo": ("xcsh_store.index",),
}

# Modules side by side in one package folder, at most: more is a folder to split in rooms.
MOST_MODULES = 15

# Arrows that break the rule today, each with the change that removes it. Once that change is
# merged, test_every_known_violation_is_still_there names the arrows to delete from here; the
# aim is an empty set.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()

# Folders that hold more than MOST_MODULES today, each with the change that splits it; the
# same test as for KNOWN_VIOLATIONS names those that no longer do.
KNOWN_CROWDED: set[str] = set()


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
        # `from xcsh_store.index import db` reads the submodule db, not the front.
        submodule = f"{source}.{alias.name}"
        yield submodule if submodule in MODULES else source


@functools.cache
def arrows() -> frozenset[tuple[str, str]]:
    """Every (importer, imported) pair between modules of the package."""
    found = set()
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                imported += _imported(module, node)
        found |= {
            (module, name)
            for name in imported
            if name.split(".")[0] == "xcsh_store" and name != module
        }
    return frozenset(found)


def breaks_the_rule(importer: str, imported: str) -> bool:
    above, below = part_of(importer), part_of(imported)
    assert above is not None and below is not None
    fronts = FRONTS.get(above, ())
    if any(imported.startswith(f"{front}.") for front in fronts):
        return True
    return above != below and below not in BELOW[above]


def circles(pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The import circles of ``pairs`` (importer, imported) between modules of the same part:
    strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    following: dict[str, list[str]] = {}
    for importer, imported in sorted(pairs):
        following.setdefault(imported, [])
        if part_of(importer) == part_of(imported):
            following.setdefault(importer, []).append(imported)
    order: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = lowest[module] = len(order)
        stack.append(module)
        for imported in following[module]:
            if imported not in order:
                visit(imported)
                lowest[module] = min(lowest[module], lowest[imported])
            elif imported in stack:
                lowest[module] = min(lowest[module], order[imported])
        if lowest[module] == order[module]:
            component = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(component) > 1:
                found.append(sorted(component))

    for module in following:
        if module not in order:
            visit(module)
    return sorted(found)


def crowded_folders(package: Path = PACKAGE) -> dict[str, int]:
    """Folders of ``package`` with more than MOST_MODULES modules side by side -> how many."""
    counts = {
        folder.relative_to(package.parent).as_posix(): len(list(folder.glob("*.py")))
        for folder in [package, *(path.parent for path in package.rglob("__init__.py"))]
    }
    return {folder: count for folder, count in counts.items() if count > MOST_MODULES}


def test_every_module_belongs_to_a_part():
    assert [module for module in MODULES if part_of(module) is None] == []


def test_imports_run_downward_only():
    violations = {arrow for arrow in arrows() if breaks_the_rule(*arrow)}
    new = sorted(violations - KNOWN_VIOLATIONS)
    assert new == [], "\n".join(
        f"{importer} ({part_of(importer)}) imports {imported} ({part_of(imported)})"
        for importer, imported in new
    )


def room_of(module: str) -> str | None:
    """The room of APART (either side) that ``module`` is in, else None."""
    return next(
        (room for room in (*APART, *APART.values()) if f"{module}.".startswith(f"{room}.")), None
    )


def crosses_rooms(importer: str, imported: str) -> bool:
    """Whether the import goes from one of two rooms kept APART into the other."""
    rooms = {room_of(importer), room_of(imported)}
    return any(rooms == {one, other} for one, other in APART.items())


def test_rooms_kept_apart_import_nothing_of_each_other():
    crossing = sorted(arrow for arrow in arrows() if crosses_rooms(*arrow))
    assert crossing == [], "\n".join(f"{one} imports {other}" for one, other in crossing)


def test_a_crossing_between_rooms_is_found():
    assert crosses_rooms("xcsh_store.index.read.search", "xcsh_store.index.write.stale_search")
    assert crosses_rooms("xcsh_store.index.write.indexer", "xcsh_store.index.read")
    assert not crosses_rooms("xcsh_store.index.read.search", "xcsh_store.index.model.search_rows")
    assert not crosses_rooms("xcsh_store.index.write.indexer", "xcsh_store.index.model.paths")
    assert not crosses_rooms("xcsh_store.index.read.search", "xcsh_store.index.read.ranking")
    # A name that only begins like a room is not in it.
    assert not crosses_rooms("xcsh_store.index.readers", "xcsh_store.index.write.sync")


def test_no_part_imports_in_a_circle():
    assert circles(arrows()) == []


def test_no_folder_holds_more_than_15_modules():
    assert sorted(set(crowded_folders()) - KNOWN_CROWDED) == []


def test_every_known_violation_is_still_there():
    """A fixed arrow leaves KNOWN_VIOLATIONS, so that it cannot come back unnoticed; a folder
    split in rooms leaves KNOWN_CROWDED."""
    gone = sorted(arrow for arrow in KNOWN_VIOLATIONS if arrow not in arrows())
    assert gone == [], f"fixed: delete from KNOWN_VIOLATIONS {gone}"
    split = sorted(KNOWN_CROWDED - set(crowded_folders()))
    assert split == [], f"split: delete from KNOWN_CROWDED {split}"


def test_the_rule_reads_every_kind_of_import():
    found = arrows()
    assert ("xcsh_store.cli.verbs.usage", "xcsh_store.index") in found  # from a package: its front
    assert ("xcsh_store.__main__", "xcsh_store.cli.launch") in found
    assert ("xcsh_store.cli.app", "xcsh_store") in found  # from the top-level package
    assert ("xcsh_store.index", "xcsh_store.index.db") in found  # a submodule by name
    # A module a lazy front names (under TYPE_CHECKING, where lazy.py reads it).
    assert ("xcsh_store.index", "xcsh_store.index.read.search") in found
    assert ("xcsh_store", "xcsh_store.format.context") in found
    assert breaks_the_rule("xcsh_store.format.jsonl", "xcsh_store.session.manager")
    assert breaks_the_rule("xcsh_store.index.model.facts", "xcsh_store.artifacts.store")
    assert breaks_the_rule("xcsh_store.index.store", "xcsh_store.session.manager")
    assert breaks_the_rule("xcsh_store.cli.app", "xcsh_store.index.db")
    assert breaks_the_rule("xcsh_store.web.app", "xcsh_store.index.db")
    assert breaks_the_rule("xcsh_store.team.reader", "xcsh_store.index.read.tree")
    assert not breaks_the_rule("xcsh_store.cli.app", "xcsh_store.index")
    assert not breaks_the_rule("xcsh_store.team.reader", "xcsh_store.team.server")
    assert not breaks_the_rule("xcsh_store.index.read.tree", "xcsh_store.format.context")
    # The demo's sample is below the CLI, over the index's front.
    assert ("xcsh_store.cli.verbs.demo", "xcsh_store.demo.build") in found
    assert not breaks_the_rule("xcsh_store.cli.verbs.demo", "xcsh_store.demo.build")
    assert breaks_the_rule("xcsh_store.demo.build", "xcsh_store.cli.output.render")
    assert breaks_the_rule("xcsh_store.demo.build", "xcsh_store.index.write.sync")


def test_circles_and_crowded_folders_are_found(tmp_path: Path):
    store, sessions = "xcsh_store.index.store", "xcsh_store.index.read.sessions"
    tree = "xcsh_store.index.read.tree"
    around = [(store, sessions), (sessions, tree), (tree, store), (store, "xcsh_store.errors")]
    assert circles(around) == [sorted([store, sessions, tree])]
    # Between parts an arrow back is a layering violation, not a circle of a part.
    assert circles([(store, "xcsh_store.format.jsonl"), ("xcsh_store.format.jsonl", store)]) == []
    package = tmp_path / "package"
    room = package / "room"
    room.mkdir(parents=True)
    for folder, modules in ((package, MOST_MODULES), (room, MOST_MODULES + 1)):
        for name in ["__init__", *(f"m{number}" for number in range(modules - 1))]:
            (folder / f"{name}.py").touch()
    assert crowded_folders(package) == {"package/room": MOST_MODULES + 1}


# -- the tests themselves ----------------------------------------------------------------------

TESTS = Path(__file__).resolve().parent


def imported_test_modules(source: str) -> list[str]:
    """The test modules (``test_*``) that ``source`` imports, anywhere in it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return [name for name in found if name.split(".")[0].startswith("test_")]


def test_no_test_module_imports_another():
    """What several test modules share lives in tests/helpers/ (or a helper module beside the
    tests): a test module imported by another runs its fixtures and skips there too, and a
    move or a rename of one test breaks the other."""
    imports = {
        str(path.relative_to(TESTS)): imported_test_modules(path.read_text(encoding="utf-8"))
        for path in sorted(TESTS.rglob("*.py"))
    }
    assert {path: names for path, names in imports.items() if names} == {}


def test_an_import_of_a_test_module_is_found():
    source = "import os\ndef f():\n    from test_watch import Watch\nimport test_cli_width as w\n"
    source += "from helpers.browser import wait_until\n"
    assert sorted(imported_test_modules(source)) == ["test_cli_width", "test_watch"]
