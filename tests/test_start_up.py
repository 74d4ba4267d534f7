"""What a process imports before it can answer: each verb is found in the module that says it
defines it, and ``ls`` (like ``import xcsh_store``) loads none of the parts it does not use."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

import xcsh_store
from xcsh_store.cli import cli
from xcsh_store.cli.app import VERB_MODULES

# What the sync `ls` runs first needs; `ls --no-sync` none of it.
SYNC_MODULES = ("xcsh_store.index.write.sync", "xcsh_store.index.write.indexer")
# What `ls` never needs: gc, verify, repair, the manager, artifacts, history's own store,
# charts. (Search is imported: every connection of a SessionIndex gets its SQL functions,
# xcsh_rank and entry_text.)
NOT_FOR_LS = (
    "xcsh_store.index.upkeep.gc",
    "xcsh_store.index.upkeep.watch",
    "xcsh_store.index.upkeep.verify",
    "xcsh_store.index.upkeep.repair",
    "xcsh_store.index.read.tree",
    "xcsh_store.index.read.query",
    "xcsh_store.session.manager",
    "xcsh_store.artifacts.urls",
    "xcsh_store.history.store",
    "xcsh_store.agents.prices.price_file",
    "xcsh_store.cli.verbs.sessions",
    "xcsh_store.cli.verbs.maintenance",
    "xcsh_store.cli.output.chart",
    "xcsh_store.demo",
    "xcsh_store.cli.verbs.live",
    "xcsh_store.watch",
    "xcsh_store.web",
    "xcsh_store.agent_tools",
)
# The live verbs' packages: imported by `watch`, `serve` and `mcp` only.
LIVE_PACKAGES = ("watchfiles", "starlette", "uvicorn", "jinja2", "mcp")


def _modules_after(code: str) -> set[str]:
    """The modules of the package a fresh interpreter has imported after running ``code``."""
    script = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('xcsh_store'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_every_verb_is_defined_by_the_module_that_says_so():
    found = {}
    for module in sorted(set(VERB_MODULES.values())):
        importlib.import_module(f"xcsh_store.cli.verbs.{module}")
    for name, command in cli.commands.items():
        found[name] = command.callback.__module__.rsplit(".", 1)[1]
    assert found == VERB_MODULES


def test_help_lists_every_verb_in_a_fresh_process():
    result = subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    commands = result.stdout.split("Commands:\n")[1].split("\n\n")[0]
    listed = {line.split()[0] for line in commands.splitlines()}
    assert listed == set(VERB_MODULES)


def test_the_click_api_finds_every_verb():
    context = click.Context(cli)
    assert cli.list_commands(context) == sorted(VERB_MODULES)
    assert all(cli.get_command(context, name) is not None for name in VERB_MODULES)


def _ls_modules(agent_dir: Path, *options: str) -> set[str]:
    return _modules_after(
        "from xcsh_store.cli import cli\n"
        f"cli(['--agent-dir', {str(agent_dir)!r}, *{options!r}, 'ls'], standalone_mode=False)"
    )


def test_ls_imports_only_what_it_needs(agent_dir, two_sessions):
    loaded = _ls_modules(agent_dir)
    assert "xcsh_store.cli.verbs.listing" in loaded and "xcsh_store.index.read.sessions" in loaded
    assert set(SYNC_MODULES) <= loaded
    # An unchanged tree: no price table is built (its files parsed), no damage repaired.
    assert sorted(set(NOT_FOR_LS) & loaded) == []


def test_ls_no_sync_imports_no_sync(agent_dir, two_sessions):
    loaded = _ls_modules(agent_dir, "--no-sync")
    assert "xcsh_store.cli.verbs.listing" in loaded
    assert sorted(set(NOT_FOR_LS + SYNC_MODULES) & loaded) == []


def test_help_and_ls_import_none_of_the_live_verbs_packages(agent_dir, two_sessions):
    script = (
        "import sys\nfrom xcsh_store.cli import cli\n"
        f"cli(['--agent-dir', {str(agent_dir)!r}, 'ls'], standalone_mode=False)\n"
        "try:\n    cli(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        f"print(sorted(set(sys.modules) & set({LIVE_PACKAGES!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    ("arguments", "verb", "package", "extra"),
    [
        ("watch", "watch", "watchfiles", "web"),
        ("serve", "serve", "starlette", "web"),
        ("mcp", "mcp", "mcp", "mcp"),
        ("push postgresql://127.0.0.1/team", "push", "psycopg", "team"),
        ("export parquet out", "export parquet", "pyarrow", "team"),
        ("--db postgresql://127.0.0.1/team ls", "--db", "psycopg", "team"),
        ("pick", "pick", "prompt_toolkit", "pick"),
    ],
)
def test_a_verb_without_its_extra_says_how_to_get_it(
    agent_dir, two_sessions, arguments, verb, package, extra
):
    script = (
        f"import sys\nsys.modules[{package!r}] = None\nfrom xcsh_store.cli import cli\n"
        f"cli(['--agent-dir', {str(agent_dir)!r}, *{arguments.split()!r}])"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert (
        result.stderr == f"xcsh-store {verb} needs {package}: pip install 'xcsh-store[{extra}]'\n"
    )


def test_importing_the_package_imports_no_part_until_a_name_is_used():
    assert _modules_after("import xcsh_store") == {"xcsh_store", "xcsh_store.lazy"}
    loaded = _modules_after("from xcsh_store import BlobStore")
    assert "xcsh_store.format.blobs" in loaded and "xcsh_store.session.manager" not in loaded


def test_every_name_offered_is_found_and_the_api_listed():
    offered = set(dir(xcsh_store))
    assert set(xcsh_store.__all__) <= offered
    for name in offered - {"__getattr__", "__dir__"}:
        assert getattr(xcsh_store, name) is not None, name
    assert xcsh_store.HistoryError.__module__ == "xcsh_store.errors"  # beyond the API, too


def test_an_unknown_name_is_an_attribute_error():
    try:
        _ = xcsh_store.no_such_name
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("xcsh_store.no_such_name did not raise")


# Modules `xcsh-store --version` may import beyond those click itself imports (issue 40's
# ≤ 70 beyond a bare interpreter): how many click takes depends on what the interpreter loaded
# at its start (36 with an editable install, whose finder loads re and pathlib first; 62 with
# an installed one), so the bound is on ours, measured beside click in the same interpreter.
MOST_MODULES_BEYOND_CLICK = 12


def _module_count_after(code: str) -> int:
    """How many modules a fresh interpreter holds after ``code``, beyond those it started with."""
    script = f"import sys\nbefore = len(sys.modules)\n{code}\nprint(len(sys.modules) - before)"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    return int(result.stdout.splitlines()[-1])


def test_version_imports_click_and_almost_nothing_else():
    version = (
        "from xcsh_store.cli import cli\ntry:\n    cli(['--version'])\nexcept SystemExit:\n    pass"
    )
    beyond_click = _module_count_after(version) - _module_count_after("import click")
    assert beyond_click <= MOST_MODULES_BEYOND_CLICK
    assert _modules_after(version) == {
        "xcsh_store",
        "xcsh_store.cli",
        "xcsh_store.cli.app",
        "xcsh_store.cli.output",
        "xcsh_store.cli.output.safe",
        "xcsh_store.errors",
        "xcsh_store.lazy",
    }


def test_the_index_front_imports_a_name_s_module_only():
    loaded = _modules_after("from xcsh_store.index import SQLiteError")
    assert loaded == {
        "xcsh_store",
        "xcsh_store.lazy",
        "xcsh_store.index",
        "xcsh_store.index.engine",
    }
    loaded = _modules_after("import xcsh_store.index")
    assert loaded == {"xcsh_store", "xcsh_store.lazy", "xcsh_store.index"}


def test_the_group_names_the_agent_dir_variable_the_paths_read():
    from xcsh_store.cli import app
    from xcsh_store.paths import AGENT_DIR_ENV

    assert app.AGENT_DIR_ENV == AGENT_DIR_ENV


def test_the_verb_table_names_modules_that_exist():
    folder = Path(xcsh_store.__file__).parent / "cli" / "verbs"
    assert all((folder / f"{module}.py").is_file() for module in VERB_MODULES.values())
