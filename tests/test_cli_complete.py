"""Shell completion of session ids (unique prefixes, titles as help), project folders and model
names, through click's completion protocol as bash, zsh and fish call it (a subprocess of the
installed CLI); read-only, creating nothing, silent when there is no usable index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from session_builder import header, message, write_session

from xcsh_store.index import SessionIndex

CLI = str(Path(sys.executable).with_name("xcsh-store"))

# (project folder, session id, title, model of its reply)
SESSIONS = [
    ("--work-api--", "0199dddd-aaaa-4000-8000-000000000001", "Fix the login redirect", "gpt-5"),
    ("--work-api--", "0199dddd-aaab-4000-8000-000000000002", "Rate limit the orders API", "gpt-5"),
    ("--work-web--", "0199eeee-0000-4000-8000-000000000003", "Dark mode toggle", "claude-opus-4"),
]


@pytest.fixture
def indexed(agent_dir: Path) -> Path:
    for number, (project, session_id, title, model) in enumerate(SESSIONS):
        provider = "openai" if model.startswith("gpt") else "anthropic"
        records = [
            header(session_id, title=title, cwd=f"/work/{project.strip('-').split('-')[-1]}"),
            message(f"u{number}000000", None, "user", f"please: {title}"),
            message(f"a{number}000000", f"u{number}000000", "assistant", "done",
                    provider=provider, model=model),
        ]  # fmt: skip
        stamp = f"2026-01-0{number + 1}T00-00-00-000Z"
        write_session(agent_dir / "sessions" / project / f"{stamp}_{session_id}.jsonl", records)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


def complete(shell: str, words: str, agent: Path) -> subprocess.CompletedProcess[str]:
    """What the shell's completion script gets for the command line ``words`` (cursor at its
    end; a trailing space starts a new word)."""
    env = {**os.environ, "_XCSH_STORE_COMPLETE": f"{shell}_complete", "XCSH_AGENT_DIR": str(agent)}
    env["COMP_WORDS"] = words
    typed = "" if words.endswith(" ") else words.split()[-1]
    # bash and zsh pass the number of the word at the cursor, fish the word itself.
    env["COMP_CWORD"] = typed if shell == "fish" else str(len(words.split()) - (typed != ""))
    result = subprocess.run([CLI], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result


def zsh_items(output: str) -> list[tuple[str, str]]:
    """(value, help) pairs: zsh gets type, value and help on three lines per item."""
    lines = output.splitlines()
    return [(lines[i + 1], lines[i + 2]) for i in range(0, len(lines), 3)]


def test_bash_completes_session_ids_as_their_unique_prefixes(indexed):
    result = complete("bash", "xcsh-store show 0199dd", indexed)
    assert result.stdout.splitlines() == ["plain,0199dddd-aaab", "plain,0199dddd-aaaa"]


def test_zsh_shows_each_session_title_as_help(indexed):
    items = zsh_items(complete("zsh", "xcsh-store show 0199", indexed).stdout)
    assert items == [
        ("0199eeee", "Dark mode toggle"),
        ("0199dddd-aaab", "Rate limit the orders API"),
        ("0199dddd-aaaa", "Fix the login redirect"),
    ]


def test_a_prefix_longer_than_the_unique_one_is_kept(indexed):
    items = zsh_items(complete("zsh", "xcsh-store cat x --session 0199eeee-00", indexed).stdout)
    assert items == [("0199eeee-00", "Dark mode toggle")]


def test_fish_completes_projects_with_their_session_counts(indexed):
    # A project is the folder the sessions were started in.
    result = complete("fish", "xcsh-store ls --project ", indexed)
    assert sorted(result.stdout.splitlines()) == [
        "plain,/work/api\t2 sessions",
        "plain,/work/web\t1 session",
    ]


@pytest.mark.parametrize(
    ("typed", "expected"),
    [("", ["claude-opus-4", "gpt-5"]), ("gp", ["gpt-5"]), ("openai/", ["openai/gpt-5"])],
)
def test_search_model_completes_model_names(indexed, typed, expected):
    result = complete("bash", f"xcsh-store search --model {typed}", indexed)
    assert result.stdout.splitlines() == [f"plain,{name}" for name in expected]


def _tree(folder: Path) -> list[tuple[str, int]]:
    """Every path below ``folder`` with its mtime."""
    return sorted((str(path), path.stat().st_mtime_ns) for path in folder.rglob("*"))


def test_completion_creates_and_changes_nothing(indexed):
    before = _tree(indexed)
    for words in ("xcsh-store show 0199", "xcsh-store ls --project ", "xcsh-store search --model "):
        complete("bash", words, indexed)
    assert _tree(indexed) == before


def test_without_an_index_completion_offers_nothing_and_creates_nothing(tmp_path):
    missing = tmp_path / "not-an-agent-dir"
    assert complete("bash", "xcsh-store show 01", missing).stdout.strip() == ""
    assert not missing.exists()


def test_a_damaged_index_offers_nothing_quietly(agent_dir):
    agent_dir.mkdir()
    (agent_dir / "index.db").write_bytes(b"this is not a database" * 100)
    assert complete("zsh", "xcsh-store show 01", agent_dir).stdout.strip() == ""


def test_the_completion_verb_prints_a_script_bash_loads_and_completes_with(indexed):
    script = subprocess.run(
        [CLI, "completion", "bash"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    # The script runs the command it completes (xcsh-store) from the PATH.
    path = str(Path(CLI).parent) + os.pathsep + os.environ["PATH"]
    completed = subprocess.run(
        ["bash", "-c", 'eval "$1"; COMP_WORDS=(xcsh-store se); COMP_CWORD=1;'
         ' _xcsh_store_completion xcsh-store; printf "%s\\n" "${COMPREPLY[@]}"', "-", script],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": path},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["search", "secrets", "serve"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_the_completion_verb_prints_the_script_of_each_shell(shell):
    result = subprocess.run([CLI, "completion", shell], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert f"_XCSH_STORE_COMPLETE={shell}_complete" in result.stdout
