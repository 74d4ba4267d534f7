"""Every verb, driven with generated option values, ends with exit code 0, 1 or 2 and never a
traceback: the command tree is walked and each parameter gets values of its type (huge and
negative numbers, odd durations and dates, Unicode, choices, flags)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_builder import PI_FIXTURES

from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex

# `demo` only writes a sample into a folder it is given; generated values add nothing to it.
# `watch`, `serve` and `mcp` run until stopped (tests/test_watch.py, test_web*.py and
# test_mcp.py run them as processes).
SKIPPED = {("demo",), ("watch",), ("serve",), ("mcp",)}

ODD_TEXT = [
    "99999999d", "10000000000000000000000d", "99999999999d", "1e400d", "-1d", "0s", "1h30m",
    "7d", "nan", "inf", "-inf", "1e400", "99999999999", "-5", "0", "2026-02-30", "0001-01-01",
    "9999-12-31T23:59:59-01:00", "2026-11-01T09:30Z", "", " ", "-", "--", "ä", "😀 →", "\u202e",
    "SELECT :a", "select 1; select 2", "SELECT * FROM sessions", "artifact://0", "agent://0-x",
    "%", "_", "*", '"', "'", "NOT", "(",
]  # fmt: skip
HUGE_INTS = [0, 1, -1, -5, 2**31, 2**63, 2**64, 10**20, -(10**20), 10**23]


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """Every verb of the group, as click finds them (the top-level verbs load on demand)."""
    context = click.Context(group)
    names = group.list_commands(context)
    return {name: command for name in names if (command := group.get_command(context, name))}


def leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in sorted(subcommands(group).items()):
        if isinstance(command, click.Group):
            found += leaf_commands(command, (*path, name))
        elif (*path, name) not in SKIPPED:
            found.append((*path, name))
    return found


def command_at(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = subcommands(command)[name]
    return command


# A command line cannot hold NUL (argv entries are C strings), so no argument does.
ARGUMENT_TEXT = st.text(st.characters(blacklist_characters="\x00"), max_size=12)


def text_values(known: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(ODD_TEXT + known), ARGUMENT_TEXT)


def relative_paths(known: list[str]) -> st.SearchStrategy[str]:
    """Path parameters stay inside the temporary working folder (or name the fixture's files)."""
    names = ARGUMENT_TEXT.filter(lambda text: not text.startswith("/") and ".." not in text)
    return st.one_of(names, st.sampled_from(known))


def values_for(kind: click.ParamType, known: list[str]) -> st.SearchStrategy[str]:
    if isinstance(kind, click.Choice):
        return st.one_of(st.sampled_from([str(choice) for choice in kind.choices]), text_values([]))
    if isinstance(kind, click.types.IntParamType):
        return st.one_of(st.integers(-(2**70), 2**70), st.sampled_from(HUGE_INTS)).map(str)
    if isinstance(kind, click.types.FloatParamType):
        return st.one_of(st.floats().map(repr), st.sampled_from(ODD_TEXT))
    if isinstance(kind, click.Path):
        return relative_paths(known)
    return text_values(known)


@st.composite
def arguments(draw: st.DrawFn, command: click.Command, known: list[str]) -> list[str]:
    argv: list[str] = []
    for param in command.params:
        if isinstance(param, click.Argument):
            count = draw(st.integers(1, 2)) if param.nargs == -1 else 1
            argv += [draw(values_for(param.type, known)) for _ in range(count)]
            continue
        assert isinstance(param, click.Option)
        if param.name == "help" or not (param.required or draw(st.booleans())):
            continue
        flag = param.opts[-1] if draw(st.booleans()) else param.opts[0]
        if param.is_flag:
            argv.append(flag)
        elif isinstance(param.type, click.Tuple):
            argv += [flag, *(draw(values_for(kind, known)) for kind in param.type.types)]
        else:
            argv += [flag, draw(values_for(param.type, known))]
    return argv


@pytest.fixture(scope="module")
def small_agent(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A few real pi sessions, indexed, with a prompt in history.db; and names a verb may take."""
    root = tmp_path_factory.mktemp("fuzz")
    agent = root / "agent"
    folder = agent / "sessions" / "--fixtures--"
    folder.mkdir(parents=True)
    smallest = sorted(PI_FIXTURES, key=lambda path: path.stat().st_size)[:4]
    files = [Path(shutil.copy(path, folder / path.name)) for path in smallest]
    with SessionIndex.open(str(agent)) as index:
        index.sync()
        ids = [session.session_id[:8] for session in index.list_sessions()]
    (root / "work").mkdir()
    return agent, [str(path) for path in files] + ids


@pytest.mark.parametrize("path", leaf_commands(cli), ids=" ".join)
@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_verb_takes_any_option_values_without_a_traceback(small_agent, path, data):
    agent, known = small_agent
    argv = data.draw(arguments(command_at(path), known))
    colour = data.draw(st.sampled_from(["never", "always"]))
    working = os.getcwd()
    os.chdir(agent.parent / "work")  # anything a verb writes lands here
    try:
        result = CliRunner().invoke(
            cli, ["--agent-dir", str(agent), "--color", colour, *path, *argv]
        )
    finally:
        os.chdir(working)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        argv,
        result.exception,
    )
    assert result.exit_code in (0, 1, 2), (argv, result.output)
    assert "Traceback" not in result.output, (argv, result.output)


def test_the_walk_reaches_every_verb():
    names = {" ".join(path) for path in leaf_commands(cli)}
    assert {"ls", "search", "sql", "usage", "gc", "history prune", "history add"} <= names


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", "--limit", "99999999999999999999"],
        ["search", "x", "--limit", "99999999999999999999"],
        ["search", "x", "--since", "99999999d"],
        ["usage", "--since", "99999999d"],
        ["search", "x", "--until", "10000000000000000000000d"],
        ["search", "x", "--since", "9999-12-31T23:59:59-01:00"],
        ["gc", "--grace", "99999999999d"],
        ["history", "prune", "--older-than", "99999999999"],
        ["history", "prune", "--older-than", "nan"],
        ["history", "prune", "--keep-last", "99999999999999999999"],
        ["sql", "--timeout", "nan", "SELECT 1"],
    ],
    ids=" ".join,
)
def test_huge_or_odd_option_values_are_usage_errors(small_agent, argv):
    result = CliRunner().invoke(cli, ["--agent-dir", str(small_agent[0]), *argv])
    assert result.exit_code == 2 and result.exception is not None, result.output
    assert "Invalid value" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize(
    "argv",
    [
        ["usage", "--since", "2026-11-05", "--until", "2026-11-01"],
        ["usage", "--until", "2026-11-01", "--since", "2026-11-05"],
        ["search", "x", "--since", "1d", "--until", "2d"],
    ],
    ids=" ".join,
)
def test_an_inverted_time_range_is_a_usage_error(small_agent, argv):
    result = CliRunner().invoke(cli, ["--agent-dir", str(small_agent[0]), *argv])
    assert result.exit_code == 2, result.output
    assert "is after --until" in result.stderr


def test_an_empty_time_range_is_allowed(small_agent):
    argv = ["usage", "--since", "2026-11-01", "--until", "2026-11-01", "--json"]
    assert CliRunner().invoke(cli, ["--agent-dir", str(small_agent[0]), *argv]).exit_code == 0
