"""Errors and small edges of the command line: JSON errors a script can read, conflicting or
out-of-range options, entry id prefixes, empty results, what migrate says it does."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.cli import cli
from xcsh_store.history.store import HistoryStorage
from xcsh_store.index import SessionIndex
from xcsh_store.paths import get_history_db_path

# Entry ids that share prefixes: "ab" matches three, "abd" one.
ENTRY_IDS = ("abc10000", "abc20000", "abd30000", "f0000004")


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


@pytest.fixture
def indexed(agent_dir: Path) -> Path:
    records: list[dict] = [header("0199aaaa-prefix-session")]
    parent = None
    for number, entry_id in enumerate(ENTRY_IDS):
        role = "user" if number % 2 == 0 else "assistant"
        records.append(message(entry_id, parent, role, f"message {number}"))
        parent = entry_id
    write_session(sessions_dir(agent_dir) / "2026-01-01T00-00-00-000Z_prefix.jsonl", records)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


def json_error(result: Result) -> dict[str, str]:
    """The one JSON line on stderr; stdout holds nothing."""
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return json.loads(lines[0])["error"]


# --------------------------------------------------------------------------------------------
# --json errors


def test_a_user_error_under_json_is_a_json_object_on_stderr_with_exit_1(indexed):
    error = json_error(run("show", "no-such-session", "--json", code=1))
    assert error == {
        "type": "SessionNotFoundError",
        "message": "No session matches 'no-such-session'",
    }


def test_a_missing_index_under_json_names_the_library_error(tmp_path):
    error = json_error(run("--agent-dir", str(tmp_path / "none"), "ls", "--json", code=1))
    assert error["type"] == "IndexDatabaseError" and "run `xcsh-store sync`" in error["message"]


@pytest.mark.parametrize(
    "args",
    [
        ("ls", "--json", "--no-such-option"),
        ("usage", "--by", "nonsense", "--json"),
        ("search", "--json"),
        ("history", "recent", "-n", "-5", "--json"),
    ],
    ids=" ".join,
)
def test_usage_errors_under_json_are_json_with_exit_2(indexed, args):
    error = json_error(run(*args, code=2))
    assert error["type"] == "UsageError" and error["message"]
    assert "Usage:" not in error["message"]


def test_without_json_errors_stay_one_line_of_text(indexed):
    result = run("show", "no-such-session", code=1)
    assert result.stderr == "Error: No session matches 'no-such-session'\n"


def test_json_after_a_double_dash_is_a_query_word_not_the_option(indexed):
    # After `--`, "--json" is the query (an excluded word alone: a usage error), so the error
    # is the plain one.
    result = run("search", "--", "--json", code=2)
    assert result.stderr.startswith("Usage:")


# --------------------------------------------------------------------------------------------
# show


def test_show_tree_and_context_together_is_a_usage_error(indexed):
    result = run("show", "0199aaaa", "--tree", "--context", code=2)
    assert "--tree and --context" in result.stderr


def test_leaf_accepts_a_unique_prefix_of_an_entry_id(indexed):
    shown = json.loads(run("show", "0199aaaa", "--leaf", "abd", "--json").stdout)
    assert shown["leaf_id"] == "abd30000"
    assert [entry["id"] for entry in shown["entries"]] == list(ENTRY_IDS[:3])
    context = json.loads(run("show", "0199aaaa", "--context", "--leaf", "abc2", "--json").stdout)
    assert context["leaf_id"] == "abc20000" and len(context["context"]["messages"]) == 2


def test_an_ambiguous_leaf_prefix_is_an_error_listing_the_candidates(indexed):
    result = run("show", "0199aaaa", "--tree", "--leaf", "ab", code=1)
    assert "ambiguous" in result.stderr
    assert all(entry_id in result.stderr for entry_id in ENTRY_IDS[:3])
    assert ENTRY_IDS[3] not in result.stderr and result.stderr.count("\n") == 1


def test_an_ambiguous_leaf_under_json_lists_the_candidates(indexed):
    error = json_error(run("show", "0199aaaa", "--leaf", "abc", "--json", code=1))
    assert error["type"] == "AmbiguousEntryError"
    assert error["candidates"] == list(ENTRY_IDS[:2])


def test_an_unknown_leaf_is_an_error(indexed):
    result = run("show", "0199aaaa", "--leaf", "zz", code=1)
    assert result.stderr == "Error: Entry zz not found\n"


# --------------------------------------------------------------------------------------------
# history


def test_a_negative_history_limit_is_a_usage_error(agent_dir):
    result = run("history", "recent", "-n", "-5", code=2)
    assert "-5" in result.stderr


def test_empty_history_results_say_no_prompts(agent_dir):
    with HistoryStorage.open(get_history_db_path(str(agent_dir))) as history:
        history.add("deploy the api", "/work/demo")
    # (What history.db lacks may be in the sessions: the line says how to look there.)
    for verb in (("search", "nothing-like-this"), ("recent", "-n", "0")):
        shown = " ".join(run("history", *verb).stdout.split())
        assert shown.startswith("No prompts in history.db"), shown
        assert f"xcsh-store history {verb[0]} " in shown and shown.endswith(" --sessions")
    assert "deploy the api" in run("history", "recent").stdout


# --------------------------------------------------------------------------------------------
# migrate


def test_migrate_says_it_keeps_entry_ids(agent_dir):
    legacy = [
        {"type": "session", "id": "0199bbbb-legacy", "timestamp": "2026-01-01T00:00:00.000Z",
         "cwd": "/work/demo"},
        {"type": "message", "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "hi"}},
    ]  # fmt: skip
    write_session(sessions_dir(agent_dir) / "2026-01-01T00-00-00-000Z_legacy.jsonl", legacy)
    assert "keeping entry ids" in " ".join(run("migrate", "--help").stdout.split())
    text = run("migrate").stdout
    assert "entry ids are unchanged" in text and "new ids" not in text


# --------------------------------------------------------------------------------------------
# Mistyped verbs


@pytest.mark.parametrize(
    ("typed", "meant"), [("serch", "'search' or 'serve'"), ("sho", "'show'"), ("usgae", "'usage'")]
)
def test_a_mistyped_verb_gets_the_verb_it_may_mean(agent_dir, typed, meant):
    result = run(typed, code=2)
    assert f"No such command '{typed}'. Did you mean {meant}?" in result.stderr


def test_a_mistyped_history_verb_gets_a_suggestion_too(agent_dir):
    assert "Did you mean 'recent'?" in run("history", "recnt", code=2).stderr


def test_a_verb_like_nothing_gets_no_suggestion(agent_dir):
    assert "Did you mean" not in run("xyzzy", code=2).stderr


# --------------------------------------------------------------------------------------------
# Arguments that are not UTF-8 (bytes of the command line Python hands over as lone surrogates)

NOT_UTF8 = "\udced\udca0\udc80"  # what $'\ud800' in bash (bytes ED A0 80) becomes in sys.argv


def _every_verb(indexed: Path) -> list[list[str]]:
    """Every verb with each of its arguments and options in turn not UTF-8, the rest valid."""
    session = "0199aaaa"
    valid = {"session": session, "query": "message", "url": "artifact://0", "prompt": "p",
             "files": str(indexed / "x.jsonl"), "shell": "bash"}  # fmt: skip
    group = cli.list_commands(click.Context(cli))
    # The live verbs would serve until stopped; their arguments are checked before (below).
    verbs = [[name] for name in group if name not in ("mcp", "serve", "watch")]
    verbs += [["history", name] for name in ("add", "recent", "search", "prune")]
    verbs += [["export", "parquet"]]
    lines = []
    for verb in verbs:
        command = cli
        for word in verb:
            command = command.get_command(click.Context(command), word)  # type: ignore[union-attr]
        positional = [valid.get(param.name or "", "x") for param in command.params
                      if isinstance(param, click.Argument)]  # fmt: skip
        for number in range(len(positional)):
            lines.append([*verb, *positional[:number], NOT_UTF8, *positional[number + 1 :]])
        for param in command.params:
            if isinstance(param, click.Option) and not param.is_flag and param.name != "help":
                option = max(param.opts, key=len)
                values = [NOT_UTF8] * param.nargs if param.nargs > 1 else [NOT_UTF8]
                lines.append([*verb, *positional, option, *values])
    return lines


def test_no_verb_ends_in_a_traceback_on_an_argument_that_is_not_utf8(
    indexed, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # relative folders (--agent-dir, demo) go here
    lines = _every_verb(indexed)
    lines += [["--agent-dir", NOT_UTF8, "sync"], ["--agent-dir", NOT_UTF8, "doctor"]]
    lines += [["serve", "--host", NOT_UTF8], ["--color", NOT_UTF8, "ls"]]
    assert len(lines) > 50
    for line in lines:
        for extra in ([], ["--json"]):
            result = CliRunner().invoke(cli, [*line, *extra])
            assert result.exit_code in (0, 1, 2), (line, extra, result.output)
            assert isinstance(result.exception, (SystemExit, type(None))), (line, extra)
            if extra and result.exit_code and result.stderr.startswith("{"):
                json.loads(result.stderr)  # still one line of JSON


def test_a_query_that_is_not_utf8_is_named_in_one_line(indexed):
    result = run("sql", NOT_UTF8, code=1)
    assert result.stderr == (
        "Error: the argument \\udced\\udca0\\udc80 is not valid UTF-8 text: give it in UTF-8\n"
    )


def test_an_agent_dir_that_is_not_utf8_is_refused_before_anything_is_made(tmp_path, monkeypatch):
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    result = run("--agent-dir", NOT_UTF8, "sync", "--init", code=2)
    assert "is not valid UTF-8, which SQLite needs" in result.stderr
    assert list(folder.iterdir()) == []


def test_an_ambiguous_uuid_prefix_lists_ten_short_ids_and_counts_the_rest(agent_dir):
    ids = [f"aaaa{number:04d}-0000-4000-8000-000000000000" for number in range(13)]
    records: list[dict] = [header("uuid-session")]
    for number, entry_id in enumerate(ids):
        records.append(message(entry_id, ids[number - 1] if number else None, "user", "hi"))
    write_session(sessions_dir(agent_dir) / "uuids.jsonl", records)
    run("sync")
    result = run("show", "uuid-session", "--leaf", "aaaa", code=1)
    assert result.stderr == (
        "Error: Entry id 'aaaa' is ambiguous: 13 entries start with it ("
        + ", ".join(entry_id[:8] for entry_id in ids[:10])
        + ", and 3 more); give more of it\n"
    )


def test_serve_on_another_address_without_a_token_says_why_in_a_whole_sentence(agent_dir):
    result = run("serve", "--host", "0.0.0.0", "--port", "9999", code=2)
    assert result.stderr.endswith(
        "Error: --host 0.0.0.0 needs a token (--token-file, XCSH_STORE_TOKEN or --token):"
        " without one, anyone who can reach port 9999 of this machine could read every"
        " session\n"
    )


# --------------------------------------------------------------------------------------------
# Filters that name nothing, and empty listings


def test_a_model_or_project_nothing_has_is_named_instead_of_no_matches(indexed):
    model = run("search", "message", "--model", "gpt-9", code=2)
    assert "Invalid value for --model: no entry in the index has the model 'gpt-9'" in model.stderr
    project = run("search", "message", "--project", "nope", code=2)
    unknown = f"no session in the index was started in {os.path.abspath('nope')} or a folder"
    assert unknown in project.stderr
    listed = json_error(run("ls", "--project", "nope", "--json", code=2))
    assert unknown in listed["message"]


def test_a_known_model_with_no_hit_is_still_no_matches(indexed):
    assert run("search", "zebra", "--model", "anthropic/claude-test").stdout == "No matches.\n"


def test_an_empty_listing_after_a_sync_says_which_folders_it_read(agent_dir, real_home):
    run("sync", "--init")
    result = run("ls", "--agent", "xcsh")
    first, hint = result.stdout.splitlines()
    assert first.startswith("No xcsh sessions. The last sync (")
    assert first.endswith(
        f"read 5 folders: {agent_dir / 'sessions'}, ~/.claude/projects (claude),"
        " ~/.codex/sessions (codex), ~/.pi/agent/sessions (pi), ~/.omp/agent/sessions (omp)."
    )
    assert "run `xcsh-store sync`" not in result.stdout and "--add-root" in hint


def test_ls_since_and_until_keep_the_sessions_active_in_that_span(agent_dir):
    for day in ("2026-03-14", "2026-03-15", "2026-03-16"):
        start = header(f"day-{day}")
        start["timestamp"] = f"{day}T09:00:00.000Z"
        path = write_session(sessions_dir(agent_dir) / f"{day}.jsonl", [start])
        end = datetime.fromisoformat(f"{day}T18:00:00+00:00").timestamp()
        os.utime(path, (end, end))
    run("sync")
    listed = json.loads(
        run("ls", "--since", "2026-03-15T00:00Z", "--until", "2026-03-16T00:00Z", "--json").stdout
    )
    assert [session["id"] for session in listed] == ["day-2026-03-15"]
    assert "is after --until" in run("ls", "--since", "2d", "--until", "9d", code=2).stderr
