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

import pytest

from xcsh_store.cli.app import VERB_MODULES
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
