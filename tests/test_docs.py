"""The manual: the site in docs/ builds with MkDocs with warnings as errors (a broken link, anchor
or include, or a page left out of the navigation, fails), its command-line reference is what the
command line prints now, and the README stays the short entry point it is meant to be.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from xcsh_store.cli.app import VERB_MODULES, cli
from xcsh_store.cli.doc_lists import REGENERATE as LISTS
from xcsh_store.cli.doc_lists import filled
from xcsh_store.cli.reference import COLUMNS, REGENERATE

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CLI_PAGE = ROOT / "docs" / "cli.md"
README_MAX_LINES = 300
# A section of the reference: its command in the heading, its --help in the text block.
_SECTION = re.compile(r"^#+ `(xcsh-store[^`]*)`\n\n```text\n(.*?)\n```\n", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _run(argv: list[str], **environment: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=ROOT,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard, not a measurement
    )


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = _run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        NO_MKDOCS_2_WARNING="1",
    )
    assert built.returncode == 0, built.stdout + built.stderr
    # The pages the site takes from other files: the README's short tour and the figures of
    # benchmarks/README.md.
    tour = (site / "tour" / "index.html").read_text(encoding="utf-8")
    assert "$ xcsh-store demo" in tour and "$ xcsh-store search --role toolResult" in tour
    figures = (site / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert "bench_team_roles.py" in figures and "--8&lt;--" not in figures
    assert (site / "cli" / "index.html").is_file()
    assert not (site / "hooks.py").exists()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The strict build is what catches a link to a page or a heading that is not there."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[Gone](#no-such-heading), [also](gone.md)\n")
    # The manual's own configuration (INHERIT), on a folder holding that one page.
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nnav: [index.md]\n"
        f"hooks: [{ROOT / 'docs' / 'hooks.py'}]\n"
    )
    built = _run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)],
        NO_MKDOCS_2_WARNING="1",
    )
    assert built.returncode != 0
    assert "no-such-heading" in built.stderr and "gone.md" in built.stderr


def test_the_cli_reference_is_what_the_command_line_prints() -> None:
    generated = _run([sys.executable, "-m", "xcsh_store.cli.reference"])
    assert generated.returncode == 0, generated.stderr
    assert CLI_PAGE.read_text(encoding="utf-8") == generated.stdout, (
        f"docs/cli.md differs from the command line's --help: run `{REGENERATE}`"
    )


def test_every_section_of_the_reference_is_the_verbs_own_help() -> None:
    """Each section is what ``xcsh-store VERB --help`` prints in a terminal of 100 columns,
    and every verb has one."""
    sections = dict(_SECTION.findall(CLI_PAGE.read_text(encoding="utf-8")))
    assert {f"xcsh-store {verb}" for verb in VERB_MODULES} | {"xcsh-store"} <= set(sections)
    assert {"xcsh-store history search", "xcsh-store team migrate"} <= set(sections)
    for command, text in sections.items():
        shown = _run(
            [sys.executable, "-m", "xcsh_store", *command.split()[1:], "--help"],
            COLUMNS=str(COLUMNS),
            NO_COLOR="1",
        )
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout == text + "\n", command


def test_the_readme_is_short_with_two_quick_start_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    # As .ci/run reads them: the first ```sh block after "## Quick start", two lines.
    quick_start = text[text.index("\n## Quick start\n") :]
    block = quick_start[quick_start.index("```sh\n") + 6 :]
    commands = [line for line in block[: block.index("```")].splitlines() if line.strip()]
    assert len(commands) == 2 and all(command.startswith("python3 -m venv") for command in commands)


@pytest.mark.parametrize("name", ["README.md", "benchmarks/README.md"])
def test_the_readmes_link_to_files_that_exist(name: str) -> None:
    """The READMEs are read on GitHub, outside the site's build: their relative links are
    checked here."""
    page = ROOT / name
    targets = [
        link.split("#")[0]
        for link in _LINK.findall(page.read_text(encoding="utf-8"))
        if not link.startswith(("http://", "https://", "#"))
    ]
    assert targets
    missing = [target for target in targets if not (page.parent / target).exists()]
    assert not missing, f"{name} links to files that are not there: {missing}"


# -- The lists of the manual whose source is code --------------------------------------------

DOCS = ROOT / "docs"


@pytest.mark.parametrize(
    "page", ["README.md", *sorted(f"docs/{path.name}" for path in DOCS.glob("*.md"))]
)
def test_each_list_of_a_page_is_what_the_code_gives_now(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    assert filled(text) == text, f"{page} has a list the code gives otherwise: run `{LISTS}`"


def test_the_pages_that_name_the_agents_name_every_one_from_the_registry() -> None:
    """The pages a new user reads first say which agents are read through a generated list,
    never a hand-written one that a new plugin leaves behind."""
    for page in ("docs/agents.md", "docs/index.md", "docs/install.md", "README.md"):
        assert "<!-- list:agents -->" in (ROOT / page).read_text(encoding="utf-8"), page
    assert "<!-- list:agents-table -->" in (DOCS / "agents.md").read_text(encoding="utf-8")


def _command_table(page: str) -> dict[str, str]:
    """``verb`` -> its row, of the verbs' table of a page (a row per verb or subverb)."""
    rows: dict[str, str] = {}
    for line in (DOCS / page).read_text(encoding="utf-8").splitlines():
        found = re.match(r"\| `([a-z-]+)", line)
        if found:
            rows[found.group(1)] = rows.get(found.group(1), "") + line
    return rows


def _parameters(command: click.Command) -> dict[str, click.Parameter]:
    """Every option of ``command`` and of its subverbs, by each of its names."""
    found = {
        name: param for param in command.params for name in (*param.opts, *param.secondary_opts)
    }
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            child = command.get_command(click.Context(command), name)
            if child is not None:
                found |= _parameters(child)
    return found


def test_the_commands_page_has_a_row_per_verb_naming_options_that_exist() -> None:
    rows = _command_table("commands.md")
    context = click.Context(cli)
    assert set(rows) == set(cli.list_commands(context))
    for verb, row in rows.items():
        command = cli.get_command(context, verb)
        assert command is not None
        parameters = _parameters(command) | _parameters(cli)  # global options too
        named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", row))
        assert named <= set(parameters), (verb, sorted(named - set(parameters)))
        # A choice spelt out (`--by day\|week\|…`) is every choice the option has.
        for option, spelt in re.findall(r"`(--[a-z-]+) ([a-z-]+(?:\\\|[a-z-]+)+)`", row):
            choices = getattr(parameters[option].type, "choices", ())
            assert set(spelt.split("\\|")) == set(choices), (verb, option)


def test_the_architecture_page_draws_every_part_and_its_imports_as_the_layering_test() -> None:
    from helpers.layers import BELOW, LEAVES

    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    layout = text[text.index("```\nxcsh_store/") : text.index("```", text.index("```\n") + 4)]
    package = ROOT / "xcsh_store"
    parts = {path.parent.name for path in package.glob("*/__init__.py")}
    drawn = set(re.findall(r"^  ([a-z_]+)/", layout, re.MULTILINE))
    assert parts <= drawn, sorted(parts - drawn)
    assert {f"{leaf}.py" for leaf in LEAVES} <= set(re.findall(r"([a-z_]+\.py)", layout))
    # The table "part | may import": a row per part (or several), each part as a folder, the
    # leaves, or the public API (`xcsh_store`); the CLI may import every part.
    table = text[text.index("| part | may import") :].split("\n\n")[0].splitlines()[2:]
    found: dict[str, set[str]] = {}
    for row in table:
        left, right = (cell.strip() for cell in row.strip("|").split("|"))
        below = {folder or leaves for folder, leaves in re.findall(r"`([a-z_]+)/`|(leaves)", right)}
        if left.startswith("`xcsh_store`"):
            found["api"] = below
        for folder, leaves in re.findall(r"`([a-z_]+)/`|(leaves)", left):
            found[folder or leaves] = below
    expected = {part: below for part, below in BELOW.items() if part not in ("cli", "main")}
    assert {part: found.get(part) for part in expected} == expected


def test_the_schema_page_names_every_table_and_view_of_a_new_index(tmp_path: Path) -> None:
    from xcsh_store.index import SessionIndex

    agent = tmp_path / "agent"
    (agent / "sessions").mkdir(parents=True)
    with SessionIndex.open(str(agent)) as index:
        names = [
            name
            for (name,) in index.connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                " AND name NOT LIKE 'sqlite_%'"
            )
        ]
    shadows = ("_data", "_idx", "_docsize", "_config", "_content")
    text = (DOCS / "schema.md").read_text(encoding="utf-8")
    missing = [
        name
        for name in names
        if not name.endswith(shadows) and f"`{name}" not in text and f"`{name}." not in text
    ]
    assert not missing
