"""The xcsh-store command line, verb by verb, in human and JSON output, with its error paths."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
import stat
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner, Result

from xcsh_store.cli import cli
from xcsh_store.cli.app import Settings, color_enabled
from xcsh_store.cli.output.render import (
    MARK_CLOSE,
    MARK_OPEN,
    PIPE_CELL_WIDTH,
    cut_marked,
    short_time,
    show_marks,
)
from xcsh_store.cli.output.table import fit_table
from xcsh_store.cli.verbs.maintenance import progress_bar
from xcsh_store.demo.build import build_demo
from xcsh_store.demo.folder import DEMO_MARKER, prepare_demo_dir
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.context import build_session_context
from xcsh_store.format.loader import load_session
from xcsh_store.format.versions import find_header_index
from xcsh_store.index import SessionFilter, SessionIndex
from xcsh_store.paths import get_blobs_dir
from xcsh_store.times import parse_duration, parse_time_bound

# The demo's story then happens between 2026-02-13 and 2026-03-15 (UTC).
DEMO_NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)
VERBS = ("sync", "ls", "show", "search", "history", "usage", "gc", "verify", "migrate", "cat",
         "sql", "demo", "doctor")  # fmt: skip


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One indexed demo agent dir for the tests that only read; ``agent`` is its folder."""
    root = tmp_path_factory.mktemp("demo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(root / "home"))
        patch.setenv("XCSH_TERMINAL_ID", "pytest-terminal")
        agent = str(root / "agent")
        prepare_demo_dir(agent)
        report = build_demo(agent, now=DEMO_NOW)
        with SessionIndex.open(agent) as index:
            index.sync()
    yield {"agent": agent, **report.sessions, "legacy": report.legacy_file,
           "orphan": report.orphan_blob}  # fmt: skip


@pytest.fixture
def fresh(demo: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A private, indexed copy of the demo for tests that change things."""
    agent = tmp_path / "fresh-agent"
    shutil.copytree(demo["agent"], agent, ignore=shutil.ignore_patterns("index.db*"))
    with SessionIndex.open(str(agent)) as index:
        index.sync()
    return {key: value.replace(demo["agent"], str(agent)) for key, value in demo.items()}


def invoke(agent: str | None, *args: str, code: int = 0) -> Result:
    prefix = ["--agent-dir", agent] if agent else []
    result = CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def as_json(agent: str, *args: str, code: int = 0) -> object:
    return json.loads(invoke(agent, *args, "--json", code=code).stdout)


def session_id(path: str) -> str:
    return os.path.basename(path)[: -len(".jsonl")].split("_", 1)[1]


def assert_one_line_error(result: Result, text: str) -> None:
    assert result.stderr.startswith("Error: ") and text in result.stderr, result.output
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------------------------
# The group: help, version, usage errors, colour


def test_version():
    assert re.fullmatch(r"xcsh-store, version \d+\.\d+\.\d+\n", invoke(None, "--version").output)


def test_help_lists_every_verb_and_how_to_enable_completion():
    text = invoke(None, "--help").output
    for verb in VERBS:
        assert re.search(rf"^\s+{verb}\s", text, re.MULTILINE), verb
    assert 'eval "$(xcsh-store completion bash)"' in text


@pytest.mark.parametrize(
    "verb",
    [*(verb.split() for verb in VERBS if verb != "history"),
     ["history", "add"], ["history", "recent"], ["history", "search"], ["history", "prune"]],
)  # fmt: skip
def test_every_verb_has_help_with_an_example(verb):
    text = invoke(None, *verb, "--help").output
    assert "Example" in text
    assert re.search(r"^\s+xcsh-store \S", text, re.MULTILINE)


@pytest.mark.parametrize(
    "args",
    [
        ["frobnicate"],
        ["ls", "--bogus"],
        ["usage", "--by", "year"],
        ["search"],
        ["search", "x", "--since", "last tuesday"],
        ["gc", "--grace", "soon"],
        ["ls", "--limit", "-3"],
        ["show"],
        ["cat", "artifact://0"],
        ["history", "prune"],
    ],
)
def test_usage_errors_exit_2_without_a_traceback(demo, args):
    result = invoke(demo["agent"], *args, code=2)
    assert "Traceback" not in result.output


def test_unknown_session_is_a_one_line_user_error(demo):
    assert_one_line_error(invoke(demo["agent"], "show", "nosuchsession", code=1), "nosuchsession")


def test_verbs_that_read_say_to_sync_when_there_is_no_index(tmp_path):
    for args in (["ls"], ["search", "x"], ["usage"], ["sql", "SELECT 1"]):
        result = invoke(str(tmp_path / "empty"), *args, code=1)
        assert_one_line_error(result, "xcsh-store sync")


def test_color_decision():
    assert color_enabled("auto", True, {}) is True
    assert color_enabled("auto", False, {}) is False
    assert color_enabled("auto", True, {"NO_COLOR": "1"}) is False
    assert color_enabled("auto", True, {"TERM": "dumb"}) is False
    assert color_enabled("never", True, {}) is False
    # An explicit request wins over NO_COLOR, as no-color.org asks.
    assert color_enabled("always", False, {"NO_COLOR": "1"}) is True


def test_no_colour_unless_asked_for(demo):
    assert "\x1b[" not in invoke(demo["agent"], "search", "cookie").output
    coloured = invoke(demo["agent"], "--color", "always", "search", "cookie").output
    assert "\x1b[1m" in coloured and "\x1b[" in coloured


def test_durations_and_time_bounds():
    assert parse_duration("1h30m").total_seconds() == 5400
    assert parse_duration("2d").total_seconds() == 172_800
    with pytest.raises(ValueError):
        parse_duration("90")
    now = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)
    assert parse_time_bound("7d", now) == "2026-03-08T12:00:00.000Z"
    assert parse_time_bound("2026-03-01T09:30:00Z", now) == "2026-03-01T09:30:00.000Z"
    with pytest.raises(ValueError):
        parse_time_bound("yesterday-ish", now)


def test_tables_fit_the_terminal_and_the_main_column_keeps_its_room_longest():
    rows = [("a1", "a title that is rather long", "the text people came for, long as well")]
    table = fit_table(rows, ("id", "title", "text"), flexible=(2, 1), width=60)
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 60
    # The title (not the main column) gives way first, down to 20 cells; then the text.
    assert re.split(r"\s{2,}", lines[2]) == [
        "a1",
        "a title that is rat…",
        "the text people came for, long as…",
    ]
    narrower = fit_table(rows, ("id", "title", "text"), flexible=(2, 1), width=50)
    # Then the main column, down to 30 cells, before the title goes below 20.
    assert [len(cell) for cell in re.split(r"\s{2,}", narrower.splitlines()[2])] == [2, 14, 30]
    wide = fit_table(rows, ("id", "title", "text"), flexible=(2, 1), width=200)
    assert "a title that is rather long" in wide and "long as well" in wide
    piped = fit_table([("x" * 300,)], ("text",), width=None)
    assert piped.splitlines()[2] == "x" * (PIPE_CELL_WIDTH - 1) + "…"


def test_short_times_drop_the_year_only_within_the_year():
    now = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    assert re.fullmatch(r"Mar \d\d \d\d:\d\d", short_time("2026-03-15T12:00:00Z", now))
    assert short_time("2025-03-15T12:00:00.000Z", now) == "2025-03-15"
    assert short_time(None, now) == short_time("not a time", now) == ""


def test_cutting_keeps_highlights_closed_and_never_empty():
    text = f"find the {MARK_OPEN}needle{MARK_CLOSE} here"
    assert cut_marked(text, 12) == f"find the {MARK_OPEN}ne{MARK_CLOSE}…"
    assert cut_marked(text, 10) == "find the …"
    assert cut_marked(text, 40) == text
    assert show_marks(cut_marked(text, 12), color=False) == "find the «ne»…"


def test_progress_bar_draws_on_a_terminal_only(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, drawn in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr("sys.stderr", stream)
        with progress_bar(Settings("/nowhere", color=False), "Indexing") as report:
            if report is not None:
                report(0, 100, "/a.jsonl")
                report(100, 100, "")
        assert ("Indexing" in stream.getvalue()) is drawn


# --------------------------------------------------------------------------------------------
# sync


def test_sync_reports_what_it_did(fresh):
    text = invoke(fresh["agent"], "sync").output
    assert text.startswith("Synced 13 files: 0 changed, 13 unchanged, 0 removed")
    report = as_json(fresh["agent"], "sync", "--full")
    assert report["files_seen"] == report["files_changed"] == 13
    assert report["entries_added"] == report["entries_removed"] > 0
    assert set(report) >= {"bytes_read", "seconds", "unreadable", "missing_roots"}


def test_sync_remembers_extra_roots(fresh, tmp_path):
    extra = tmp_path / "old-machine"
    (extra / "--proj--").mkdir(parents=True)
    source = next(Path(fresh["agent"], "sessions").rglob("*.jsonl"))
    shutil.copy(source, extra / "--proj--" / "copied.jsonl")
    report = as_json(fresh["agent"], "sync", "--add-root", str(extra))
    assert report["files_seen"] == 14
    assert as_json(fresh["agent"], "sync")["files_seen"] == 14
    shutil.rmtree(extra)
    assert as_json(fresh["agent"], "sync")["missing_roots"] == [str(extra)]
    report = as_json(fresh["agent"], "sync", "--remove-root", str(extra))
    assert report["missing_roots"] == []
    assert report["files_removed"] == 1


# --------------------------------------------------------------------------------------------
# ls


def test_ls_table_newest_first(demo):
    lines = invoke(demo["agent"], "ls").output.splitlines()
    assert lines[0].split()[:3] == ["id", "modified", "cwd"]
    assert "Rate limit POST /orders" in lines[2]
    assert "renames my photos" in lines[-1]


def test_ls_json_shape(demo):
    sessions = as_json(demo["agent"], "ls")
    assert len(sessions) == 13
    login = next(item for item in sessions if item["title"] == "Fix the flaky login test")
    assert login["id"] == session_id(demo["login"])
    assert login["path"] == demo["login"]
    assert login["cwd"] == "/home/alex/src/webapp"
    assert login["project"] == "/home/alex/src/webapp"  # its cwd
    assert login["project_dir"] == "--home-alex-src-webapp--"
    assert login["message_count"] == 18 and login["version"] == 3
    assert login["created"] == "2026-03-03T09:14:00.000Z"
    assert login["cost"] > 0 and login["input_tokens"] > 0


def test_ls_filters_limit_and_order(demo):
    api = as_json(demo["agent"], "ls", "--cwd", "/home/alex/src/api")
    assert len(api) == 5 and {item["cwd"] for item in api} == {"/home/alex/src/api"}
    infra = as_json(demo["agent"], "ls", "--project", "/home/alex/src/infra")
    assert len(infra) == 2
    # A project is a folder with the folders inside it.
    everything = as_json(demo["agent"], "ls", "--project", "/home/alex/src/", "--limit", "0")
    assert {item["cwd"] for item in everything} >= {"/home/alex/src/api", "/home/alex/src/infra"}
    titles = [item["title"] for item in as_json(demo["agent"], "ls", "--order", "title")]
    named = [title for title in titles if title]
    assert named == sorted(named, key=str.lower) and len(named) == 5
    assert len(as_json(demo["agent"], "ls", "-n", "2")) == 2
    assert "--limit 0 lists all" in invoke(demo["agent"], "ls", "-n", "2").output


def test_ls_has_an_option_for_every_session_filter_field():
    """The CLI builds a SessionFilter from the options named after its fields: a new field is
    asked through ls once it has its option (cli/params.py FILTER_OPTIONS)."""
    ls_options = {param.name for param in cli.commands["ls"].params}
    assert {field.name for field in dataclasses.fields(SessionFilter)} <= ls_options


def test_ls_ids_resolve_to_the_listed_session(demo):
    sessions = {item["id"]: item for item in as_json(demo["agent"], "ls")}
    for line in invoke(demo["agent"], "ls", "-n", "0").output.splitlines()[2:]:
        prefix = line.split()[0]
        shown = as_json(demo["agent"], "show", prefix)["session"]
        assert shown["id"].startswith(prefix)
        assert shown["id"] in sessions


# --------------------------------------------------------------------------------------------
# show


def test_show_prints_the_header_and_the_active_branch(demo):
    text = invoke(demo["agent"], "show", session_id(demo["login"])[:12]).output
    assert "Session  " in text and '"Fix the flaky login test"' in text
    assert "OK, wait for the session cookie instead." in text
    assert "Try mocking the clock first." not in text  # the abandoned branch


def test_show_finds_a_session_by_file_name_prefix(demo):
    name = os.path.basename(demo["orders"])[: -len(".jsonl")]
    assert as_json(demo["agent"], "show", name)["session"]["path"] == demo["orders"]


def test_show_json_is_the_branch_of_full_entries(demo):
    shown = as_json(demo["agent"], "show", demo["login"])
    assert shown["view"] == "branch"
    entries = shown["entries"]
    assert entries[-1]["id"] == shown["leaf_id"] == shown["session"]["last_entry_id"]
    assert all(entry["parentId"] == parent["id"] for parent, entry in pairwise(entries))
    assert {entry["type"] for entry in entries} >= {"message", "branch_summary", "label"}


def test_show_tree_draws_branches_labels_and_leaves(demo):
    text = invoke(demo["agent"], "show", demo["login"], "--tree").output
    assert "1 branch point" in text
    assert re.search(r"^├─ ○ \w+ user: Try mocking the clock first\.$", text, re.MULTILINE)
    assert re.search(r"^└─ ● \w+ branch summary: Tried freezing the clock", text, re.MULTILINE)
    assert "[diagnosis]" in text and "[fixed]" in text
    assert "◀ leaf" in text and "◁ leaf" in text


def test_show_tree_json(demo):
    tree = as_json(demo["agent"], "show", demo["login"], "--tree")
    nodes = {node["id"]: node for node in tree["nodes"]}
    (point,) = tree["branch_points"]
    assert len(nodes[point]["children"]) == 2
    assert sorted(tree["labels"].values()) == ["diagnosis", "fixed"]
    assert tree["labels"][point] == "diagnosis"
    assert tree["active_path"][-1] == tree["leaf_id"]
    assert len(tree["leaves"]) == 2


def test_show_context_matches_build_session_context(demo):
    shown = as_json(demo["agent"], "show", demo["darkmode"], "--context")
    loaded = load_session(demo["darkmode"], blob_store=BlobStore(get_blobs_dir(demo["agent"])))
    entries = loaded.entries[find_header_index(loaded.entries) + 1 :]
    expected = build_session_context(entries)
    assert shown["context"]["messages"] == expected.messages
    assert shown["context"]["messages"][0]["role"] == "compactionSummary"
    assert shown["context"]["models"] == expected.models
    text = invoke(demo["agent"], "show", demo["darkmode"], "--context").output
    assert "compactionSummary" in text and "thinking" in text


def test_show_leaf_selects_another_branch(demo):
    tree = as_json(demo["agent"], "show", demo["login"], "--tree")
    side = next(leaf for leaf in tree["leaves"] if leaf != tree["leaf_id"])
    shown = as_json(demo["agent"], "show", demo["login"], "--leaf", side)
    assert shown["entries"][-1]["id"] == side
    text = invoke(demo["agent"], "show", demo["login"], "--context", "--leaf", side).output
    assert "Try mocking the clock first." in text


def test_show_unknown_leaf_is_a_user_error(demo):
    result = invoke(demo["agent"], "show", demo["login"], "--leaf", "nope", code=1)
    assert_one_line_error(result, "nope")


# --------------------------------------------------------------------------------------------
# search


def test_search_table_highlights_matches(demo):
    text = invoke(demo["agent"], "search", "session", "cookie").output
    assert "OK, wait for the «session» «cookie» instead" in text
    assert text.splitlines()[0].split() == [
        "session", "entry", "when", "role", "title", "/", "cwd", "match",
    ]  # fmt: skip
    side = invoke(demo["agent"], "search", "mocking", "clock").output.splitlines()[2]
    assert "user (side)" in side


def test_search_json_shape(demo):
    hits = as_json(demo["agent"], "search", "clock")
    assert hits and all("«clock" in hit["snippet"] for hit in hits)
    side = [hit for hit in hits if not hit["on_active_branch"]]
    assert side and all(hit["path"] == demo["login"] for hit in side)
    assert set(hits[0]) >= {"session_id", "entry_id", "role", "timestamp", "score", "model"}


def test_search_filters(demo):
    tool_hits = as_json(demo["agent"], "search", "passed", "--role", "toolResult")
    assert tool_hits and {hit["role"] for hit in tool_hits} == {"toolResult"}
    api = as_json(demo["agent"], "search", "orders", "--cwd", "/home/alex/src/api")
    assert api and {hit["cwd"] for hit in api} == {"/home/alex/src/api"}
    assert as_json(demo["agent"], "search", "cookie", "--since", "2026-03-14") == []
    assert as_json(demo["agent"], "search", "cookie", "--until", "2026-03-01") == []
    assert as_json(demo["agent"], "search", "cookie", "--model", "gpt-5") == []
    assert len(as_json(demo["agent"], "search", "the", "--limit", "3")) == 3


@pytest.mark.parametrize("query", ['"unbalanced', "NEAR(", "a AND", "col:x", "#123", "x*"])
def test_search_never_fails_on_query_syntax(demo, query):
    invoke(demo["agent"], "search", "--", query)


@pytest.mark.parametrize("query", ["*", "-", "", '""', "..."])
def test_search_without_any_word_is_a_usage_error(demo, query):
    result = invoke(demo["agent"], "search", "--", query, code=2)
    assert "Nothing to search for" in result.stderr


def test_search_without_hits(demo):
    assert invoke(demo["agent"], "search", "zebra").output == "No matches.\n"


# --------------------------------------------------------------------------------------------
# cat


def test_cat_artifact_and_paging(demo):
    full = invoke(demo["agent"], "cat", "artifact://0", "--session", demo["login"]).output
    assert full.startswith("tests/e2e/test_login.py::test_login[run01] PASSED\n")
    assert "4 failed, 16 passed" in full
    page = invoke(
        demo["agent"], "cat", "artifact://0", "--session", session_id(demo["login"]),
        "--offset", "3", "--limit", "2",
    ).output  # fmt: skip
    assert page.splitlines()[:2] == [
        "tests/e2e/test_login.py::test_login[run03] FAILED",
        "tests/e2e/test_login.py::test_login[run04] PASSED",
    ]
    assert page.endswith("more lines in resource. Use --offset 5 to continue]\n")


def test_cat_agent_output_with_json_extraction(demo):
    finding = json.loads(
        invoke(demo["agent"], "cat", "agent://1-Review/findings/0", "-s", demo["orders"]).output
    )
    assert finding["severity"] == "high"
    report = as_json(demo["agent"], "cat", "agent://0-Explore", "--session", demo["orders"])
    assert report["text"].startswith("# How GET /orders queries the database")
    assert report["session_path"] == demo["orders"]


def test_cat_unknown_artifact_is_a_user_error(demo):
    result = invoke(demo["agent"], "cat", "artifact://9", "--session", demo["login"], code=1)
    assert_one_line_error(result, "Artifact 9 not found. Available: 0")


def test_cat_an_agent_output_by_its_number_names_the_one_meant(demo):
    result = invoke(demo["agent"], "cat", "agent://0", "--session", demo["orders"], code=1)
    assert_one_line_error(result, "no subagent output '0'; did you mean agent://0-Explore?")
    result = invoke(demo["agent"], "cat", "agent://7", "--session", demo["orders"], code=1)
    assert_one_line_error(result, "no subagent output '7'; it has: 0-Explore, 1-Review.")
    assert "Available: none" not in result.stderr


def test_cat_of_a_session_without_outputs_says_why(demo, tmp_path):
    result = invoke(demo["agent"], "cat", "agent://0", "--session", demo["login"], code=1)
    assert "Not found: 0" not in result.stderr
    assert_one_line_error(result, "agent://0: the session has no")
    copy = tmp_path / "claude-like.jsonl"
    copy.write_bytes(Path(demo["login"]).read_bytes())
    result = invoke(demo["agent"], "cat", "agent://0", "--session", str(copy), code=1)
    assert_one_line_error(result, "agent://0: the session has no artifacts folder;")


def test_cat_reads_a_session_file_without_an_index(fresh):
    os.unlink(os.path.join(fresh["agent"], "index.db"))
    raw = invoke(fresh["agent"], "cat", "artifact://0", "--session", fresh["orders"], "--raw")
    assert "Execution Time: 2381.4 ms" in raw.output


# --------------------------------------------------------------------------------------------
# history


def test_history_recent_and_search(fresh):
    invoke(fresh["agent"], "history", "add", "deploy the api to staging", "--cwd", "/srv")
    prompts = as_json(fresh["agent"], "history", "recent")
    assert prompts[0]["prompt"] == "deploy the api to staging"
    assert prompts[0]["source"] == "history" and prompts[0]["cwd"] == "/srv"
    found = invoke(fresh["agent"], "history", "search", "retry").output
    assert "Return a Retry-After header" in found


def test_history_recall_through_the_index_links_sessions(demo):
    hits = as_json(demo["agent"], "history", "search", "orders", "--sessions")
    by_prompt = {hit["prompt"]: hit for hit in hits}
    typed = by_prompt["Add rate limiting to POST /orders: 10 requests per minute per API key."]
    assert typed["source"] == "history" and typed["id"] == 1
    assert typed["session_path"] == demo["ratelimit"] and typed["entry_id"]
    older = by_prompt["GET /orders takes 2-3 seconds in production. Find out why."]
    assert older["source"] == "session" and older["session_path"] == demo["orders"]
    text = invoke(demo["agent"], "history", "recent", "--sessions").output
    assert text.splitlines()[0].split() == ["id", "when", "cwd", "session", "prompt"]


def test_history_rank_needs_history_db_alone(demo):
    invoke(demo["agent"], "history", "search", "x", "--sessions", "--rank", code=2)


# --------------------------------------------------------------------------------------------
# usage


def test_usage_table_has_a_total(demo):
    lines = invoke(demo["agent"], "usage", "--by", "model").output.splitlines()
    assert lines[0].split()[:3] == ["model", "entries", "input"]
    assert any(line.startswith("anthropic/claude-sonnet-4-5") for line in lines)
    # The last row of the table; a note on how the costs are known may follow it.
    table = [line for line in lines if line and not line.startswith(("Note:", "  "))]
    assert table[-1].startswith("total")


def test_usage_json_totals_add_up(demo):
    usage = as_json(demo["agent"], "usage", "--by", "day")
    rows = usage["rows"]
    assert usage["by"] == "day" and len(rows) == 13
    for key in ("entries", "input_tokens", "output_tokens", "cache_read_tokens", "total_tokens"):
        assert usage["total"][key] == sum(row[key] for row in rows)
    assert usage["total"]["cost"] == pytest.approx(sum(row["cost"] for row in rows))
    sessions_cost = sum(item["cost"] for item in as_json(demo["agent"], "ls", "-n", "0"))
    assert usage["total"]["cost"] == pytest.approx(sessions_cost)


def test_usage_since_until(demo):
    usage = as_json(demo["agent"], "usage", "--since", "2026-03-10", "--until", "2026-03-14")
    assert [row["key"] for row in usage["rows"]] == ["2026-03-10", "2026-03-11", "2026-03-13"]


def test_usage_chart_fills_quiet_days(demo):
    lines = invoke(demo["agent"], "usage", "--chart", "--since", "2026-03-01").output.splitlines()
    bars = {line.split()[0]: line for line in lines if "▕" in line}
    # From the first day with usage to the last, quiet days (03-12, 03-14) included.
    assert list(bars) == [f"2026-03-{day:02d}" for day in range(2, 16)]
    assert "█" not in bars["2026-03-12"] and "▒" not in bars["2026-03-12"]
    assert "▒" in bars["2026-03-03"] and "█" in bars["2026-03-03"]
    assert any(line.strip().startswith("cost") for line in lines)


def test_usage_cost_chart_by_model(demo):
    text = invoke(demo["agent"], "usage", "--by", "model", "--chart", "--metric", "cost").output
    assert "anthropic/claude-sonnet-4-5 ▕" in text


def test_usage_html_is_a_self_contained_svg_page(demo, tmp_path):
    page = tmp_path / "usage.html"
    result = invoke(demo["agent"], "usage", "--html", str(page))
    assert f"Wrote {page}" in result.output
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "<script" not in html and "http" not in html
    svg = ElementTree.fromstring(re.search(r"<svg.*</svg>", html, re.DOTALL).group(0))
    assert len(svg.findall("{*}rect")) >= 12
    assert len(svg.findall("{*}circle")) >= 12


# --------------------------------------------------------------------------------------------
# gc


def test_gc_dry_run_lists_the_orphan_and_dangling_nothing(demo):
    text = invoke(demo["agent"], "gc").output
    assert demo["orphan"] in text and "run with --apply" in text
    report = as_json(demo["agent"], "gc")
    assert report["candidates"] == [demo["orphan"]]
    assert report["applied"] is False and report["dangling"] == [] and report["refused"] is None


def test_gc_apply_deletes_only_unreferenced_blobs(fresh):
    blobs = Path(fresh["agent"]) / "blobs"
    before = {path.name for path in blobs.iterdir()}
    report = as_json(fresh["agent"], "gc", "--apply")
    assert report["deleted"] == [fresh["orphan"]] and report["bytes_freed"] > 0
    assert {path.name for path in blobs.iterdir()} == before - {fresh["orphan"]}


def test_gc_grace_keeps_young_blobs(fresh):
    orphan = Path(fresh["agent"]) / "blobs" / fresh["orphan"]
    age_days = (time.time() - orphan.stat().st_mtime) / 86400
    report = as_json(fresh["agent"], "gc", "--grace", f"{int(age_days) + 1}d")
    assert report["candidates"] == [] and report["kept_recent"] == 1


def test_gc_refuses_to_delete_with_a_missing_root(fresh):
    with SessionIndex.open(fresh["agent"]) as index:
        index.add_root(os.path.join(fresh["agent"], "unplugged-disk"))
    report = as_json(fresh["agent"], "gc", "--apply", code=1)
    assert "unplugged-disk" in report["refused"] and report["deleted"] == []
    assert (Path(fresh["agent"]) / "blobs" / fresh["orphan"]).exists()


def test_gc_reports_dangling_references(fresh):
    referenced = as_json(fresh["agent"], "sql", "SELECT hash FROM blobs WHERE refcount > 0")
    (Path(fresh["agent"]) / "blobs" / referenced[0]["hash"]).unlink()
    report = as_json(fresh["agent"], "gc")
    assert report["dangling"] == [referenced[0]["hash"]]
    assert "dangling reference" in invoke(fresh["agent"], "gc").output


# --------------------------------------------------------------------------------------------
# verify


def test_verify_clean(demo):
    assert invoke(demo["agent"], "verify").output.startswith("Index matches the files")
    report = as_json(demo["agent"], "verify")
    assert report["clean"] is True and report["files_checked"] == 13


def test_verify_finds_and_repairs_a_damaged_index(fresh):
    connection = apsw.Connection(os.path.join(fresh["agent"], "index.db"))
    connection.execute(
        "UPDATE entries SET parent_id = 'elsewhere'"
        " WHERE pk = (SELECT max(pk) FROM entries WHERE type = 'message')"
    )
    connection.close()
    report = as_json(fresh["agent"], "verify", code=1)
    assert report["clean"] is False and len(report["differences"]) == 1
    assert "verify --repair" in invoke(fresh["agent"], "verify", code=1).stderr
    repaired = as_json(fresh["agent"], "verify", "--repair")
    assert repaired["repaired"] == list(report["differences"])
    assert as_json(fresh["agent"], "verify")["clean"] is True


# --------------------------------------------------------------------------------------------
# migrate


def test_migrate_dry_run_changes_nothing(fresh):
    before = Path(fresh["legacy"]).read_bytes()
    report = as_json(fresh["agent"], "migrate", "--dry-run")
    statuses = {item["path"]: item["status"] for item in report["files"]}
    assert statuses[fresh["legacy"]] == "would_migrate"
    assert sum(status == "current" for status in statuses.values()) == 12
    assert Path(fresh["legacy"]).read_bytes() == before
    assert "would migrate" in invoke(fresh["agent"], "migrate", "--dry-run").output


def test_migrate_rewrites_v1_as_v3_keeping_the_ids_the_index_showed(fresh):
    ids_before = [
        entry["id"] for entry in as_json(fresh["agent"], "show", fresh["legacy"])["entries"]
    ]
    mtime = os.stat(fresh["legacy"]).st_mtime_ns
    text = invoke(fresh["agent"], "migrate").output
    assert "1 migrated, 12 already current" in text
    records = [json.loads(line) for line in Path(fresh["legacy"]).read_text().splitlines()]
    assert records[0]["version"] == 3
    assert [record["id"] for record in records[1:]] == ids_before
    assert [record["parentId"] for record in records[1:]] == [None, *ids_before[:-1]]
    assert os.stat(fresh["legacy"]).st_mtime_ns == mtime
    invoke(fresh["agent"], "sync")
    assert as_json(fresh["agent"], "verify")["clean"] is True
    assert as_json(fresh["agent"], "migrate")["files"][-1]["status"] == "current"


def test_migrate_never_touches_a_file_without_a_header(fresh, tmp_path):
    stray = tmp_path / "notes.jsonl"
    stray.write_text('{"type":"message","message":{"role":"user","content":"hi"}}\n')
    report = as_json(fresh["agent"], "migrate", str(stray))
    assert report["files"][0]["status"] == "not_a_session"
    assert stray.read_text() == '{"type":"message","message":{"role":"user","content":"hi"}}\n'


def test_migrate_missing_file_is_a_user_error(fresh, tmp_path):
    result = invoke(fresh["agent"], "migrate", str(tmp_path / "gone.jsonl"), code=1)
    assert "could not be migrated" in result.stderr and "Traceback" not in result.output


# --------------------------------------------------------------------------------------------
# sql


def test_sql_table_and_json(demo):
    query = "SELECT model, count(*) AS n FROM messages WHERE model IS NOT NULL GROUP BY model"
    text = invoke(demo["agent"], "sql", query + " ORDER BY model").output
    assert text.splitlines()[0].split() == ["model", "n"] and text.endswith("(4 rows)\n")
    rows = as_json(demo["agent"], "sql", query)
    assert {row["model"] for row in rows} == {
        "claude-3-5-sonnet", "claude-sonnet-4-5", "gemini-2.5-pro", "gpt-5",
    }  # fmt: skip


def test_sql_parameters(demo):
    rows = as_json(demo["agent"], "sql", "SELECT count(*) AS n FROM sessions WHERE cwd = :cwd",
                   "-p", "cwd", "/home/alex/src/infra")  # fmt: skip
    assert rows == [{"n": 2}]


def test_sql_cannot_write(fresh):
    for statement in ("DELETE FROM entries", "CREATE TABLE mine (x)"):
        assert_one_line_error(invoke(fresh["agent"], "sql", statement, code=1), "read-only")
    multiple = "PRAGMA query_only = OFF; DELETE FROM entries"
    assert_one_line_error(invoke(fresh["agent"], "sql", multiple, code=1), "one statement")
    assert as_json(fresh["agent"], "sql", "SELECT count(*) AS n FROM entries")[0]["n"] > 0


def test_sql_errors_are_one_line(demo):
    assert_one_line_error(invoke(demo["agent"], "sql", "SELEC 1", code=1), "syntax error")
    assert_one_line_error(invoke(demo["agent"], "sql", "SELECT * FROM nope", code=1), "nope")


# --------------------------------------------------------------------------------------------
# doctor


def test_doctor_on_a_healthy_agent_dir(demo):
    text = invoke(demo["agent"], "doctor").output
    assert "SQLite" in text and "apsw" in text and "No problems found." in text
    report = as_json(demo["agent"], "doctor")
    assert report["healthy"] is True and report["fts5"] is True
    assert report["index"]["sessions"] == 13
    assert set(report["versions"]) >= {"python", "sqlite", "apsw", "xcsh_store"}


def test_doctor_flags_files_others_can_read(fresh):
    os.chmod(fresh["login"], 0o644)
    report = as_json(fresh["agent"], "doctor", code=1)
    (problem,) = report["permission_problems"]
    assert problem["path"] == fresh["login"] and problem["mode"] == "0644"
    assert problem["fix"] == f"chmod 600 {fresh['login']}"
    assert "chmod -R go-rwx" in invoke(fresh["agent"], "doctor", code=1).output


def test_without_agent_dir_the_cli_works_on_the_one_the_environment_names(tmp_path, monkeypatch):
    agent = tmp_path / "from-env"
    (agent / "sessions").mkdir(parents=True)
    monkeypatch.setenv("XCSH_AGENT_DIR", str(agent))
    invoke(None, "sync")
    assert (agent / "index.db").exists()
    assert "$XCSH_AGENT_DIR" in invoke(None, "--help").output


def test_doctor_without_an_index(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir(mode=0o700)
    report = as_json(str(agent), "doctor", code=1)
    assert report["index"] is None and "xcsh-store sync" in " ".join(report["problems"])


# --------------------------------------------------------------------------------------------
# demo


def test_demo_defaults_to_a_folder_here_never_the_real_agent_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("XCSH_AGENT_DIR")
    monkeypatch.chdir(tmp_path)
    text = invoke(None, "demo").output
    assert (tmp_path / "xcsh-store-demo" / "index.db").exists()
    assert (tmp_path / "xcsh-store-demo" / DEMO_MARKER).exists()
    assert not (tmp_path / "home" / ".xcsh").exists()
    for command in ("ls", "search 'session cookie'", "show ", "usage --since 2026-11-16 --chart"):
        assert f"$ xcsh-store --agent-dir xcsh-store-demo {command}" in text
    assert "Fix the flaky login test" in text and "◀ leaf" in text and "▕" in text
    assert stat.S_IMODE((tmp_path / "xcsh-store-demo").stat().st_mode) == 0o700


def test_demo_again_replaces_the_earlier_demo(tmp_path):
    target = str(tmp_path / "d")
    invoke(None, "demo", "--agent-dir", target)
    invoke(None, "demo", "--agent-dir", target)
    assert len(as_json(target, "ls")) == 13


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "history.db").write_text("precious")
    result = invoke(str(tmp_path / "agent"), "demo", code=1)
    assert_one_line_error(result, "not made by `xcsh-store demo`")
    assert (tmp_path / "agent" / "history.db").read_text() == "precious"


def test_demo_content_is_deterministic(tmp_path):
    texts = []
    for name in ("one", "two"):
        agent = str(tmp_path / name)
        prepare_demo_dir(agent)
        build_demo(agent, now=DEMO_NOW)
        with SessionIndex.open(agent) as index:
            index.sync()
        query = (
            "SELECT e.type, e.role, e.timestamp, e.input_tokens, e.cost, f.text FROM entries AS e"
            " LEFT JOIN entries_fts AS f ON f.rowid = e.pk"
            " JOIN sessions AS s ON s.file_id = e.session ORDER BY s.created_at, e.seq"
        )
        texts.append(as_json(agent, "sql", query))
    assert texts[0] == texts[1]


def test_json_before_the_verb_is_json_after_it(demo):
    before = json.loads(invoke(demo["agent"], "--json", "ls").stdout)
    assert before == as_json(demo["agent"], "ls")
    history = json.loads(invoke(demo["agent"], "--json", "history", "recent", "--sessions").stdout)
    assert history == as_json(demo["agent"], "history", "recent", "--sessions")
    # An error of a verb given --json before it is JSON too.
    result = invoke(demo["agent"], "--json", "show", "no-such-session", code=1)
    assert json.loads(result.stderr)["error"]["type"] == "SessionNotFoundError"
