"""The read questions as types (index/read/questions.py): each checks itself once, both indexes
answer them, and every front prints a record with the record's own keys."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers.team_hosts import two_hosts
from session_builder import flux_records, header, message, sessions_dir, write_session

import xcsh_store
from xcsh_store import HistoryStorage
from xcsh_store.agent_tools import tools
from xcsh_store.cli import cli
from xcsh_store.errors import SearchQueryError
from xcsh_store.index import (
    TEAM_USAGE_GROUPINGS,
    USAGE_GROUPINGS,
    USAGE_GROUPS,
    IndexReader,
    PromptQuery,
    SearchQuery,
    SessionFilter,
    SessionIndex,
    SessionQuery,
    UsageQuery,
    model_match,
    project_folder,
)

__all__ = ["two_hosts"]

# -- each question checks itself once --------------------------------------------------------


def test_a_filter_keeps_each_agent_once_in_order_and_names_the_agents_for_an_unknown_one():
    assert SessionFilter(agents=("codex", "claude", "codex")).agents == ("claude", "codex")
    with pytest.raises(ValueError, match="Unknown agent 'emacs'; agents are: xcsh, pi"):
        SessionFilter(agents=("emacs",))


def test_a_filter_holds_its_time_bounds_as_index_timestamps():
    moment = datetime(2026, 11, 16, 9, 12, 3, 123000, tzinfo=UTC)
    assert SessionFilter(since=moment).since == "2026-11-16T09:12:03.123Z"
    assert SessionFilter(until="2026-11-17T00:00:00.000Z").until == "2026-11-17T00:00:00.000Z"


def test_a_filter_from_typed_text_names_the_bad_argument_and_refuses_an_empty_span():
    parsed = SessionFilter.parse(since="2026-01-01T00:00Z", until="2026-02-01T00:00Z")
    assert (parsed.since, parsed.until) == ("2026-01-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z")
    with pytest.raises(ValueError, match=r"^until: 'garbage' is not a date"):
        SessionFilter.parse(until="garbage")
    with pytest.raises(ValueError, match=r"is after until .*nothing could match"):
        SessionFilter.parse(since="2026-02-01T00:00Z", until="2026-01-01T00:00Z")


def test_questions_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SearchQuery(text="word").limit = 5  # type: ignore[misc]


def test_a_search_takes_a_role_in_any_case_and_names_the_roles_for_an_unknown_one():
    assert SearchQuery(text="word", role="TOOLRESULT").role == "toolResult"
    with pytest.raises(SearchQueryError, match="Unknown role 'wizard'; roles are: user,"):
        SearchQuery(text="word", role="wizard")


@pytest.mark.parametrize("limit", [-1, True, 2.5, "20"])
def test_a_limit_is_a_whole_number_of_0_or_more(limit: Any):
    with pytest.raises(ValueError, match="limit must be a whole number of 0 or more"):
        SearchQuery(text="word", limit=limit)
    with pytest.raises(ValueError, match="limit must be a whole number of 0 or more"):
        SessionQuery(limit=limit)


def test_a_listing_order_is_one_the_index_keeps():
    assert SessionQuery(order="title").order == "title"
    with pytest.raises(ValueError, match="order must be one of modified, created, title"):
        SessionQuery(order="size")


def test_usage_groupings_are_each_kept_once_in_order_and_checked():
    assert UsageQuery(by="model").by == ("model",)
    assert UsageQuery(by=("day", "model", "day")).by == ("day", "model")
    with pytest.raises(ValueError, match="by must be one or more of day, week, month"):
        UsageQuery(by=("day", "bogus"))
    with pytest.raises(ValueError, match="by must be one or more of"):
        UsageQuery(by=())


def test_the_groupings_are_the_ones_each_index_compiles():
    from xcsh_store.team.reader import USAGE_GROUPS as TEAM_USAGE_GROUPS

    assert tuple(USAGE_GROUPS) == USAGE_GROUPINGS
    assert tuple(TEAM_USAGE_GROUPS) == TEAM_USAGE_GROUPINGS


def test_a_prompt_limit_is_clamped_as_history_db_clamps_it():
    assert PromptQuery(limit=5000).limit == 1000
    assert PromptQuery(limit=-3).limit == 0
    assert PromptQuery(agents=("codex", "xcsh")).agents == ("codex", "xcsh")


def test_a_model_splits_into_provider_and_id_at_the_first_slash():
    assert model_match("claude-test") == ("claude-test", "claude-test", "")
    assert model_match("openrouter/anthropic/claude") == (
        "openrouter/anthropic/claude", "openrouter", "anthropic/claude",
    )  # fmt: skip


def test_a_project_is_its_folder_and_the_folders_inside_it():
    assert project_folder("/work/app/") == ("/work/app", "/work/app/")
    assert project_folder("/") == ("/", "/")
    assert project_folder("") is None


def test_both_indexes_offer_every_method_of_the_read_protocol_with_its_parameters():
    from xcsh_store.team.reader import TeamIndex

    asked = [name for name in vars(IndexReader) if not name.startswith("_")]
    assert asked[:5] == ["sessions", "hits", "usage_rows", "prompts", "has_model"]
    for name in [*asked, "__enter__", "__exit__"]:
        wanted = list(inspect.signature(getattr(IndexReader, name)).parameters)
        for index in (SessionIndex, TeamIndex):
            offered = list(inspect.signature(getattr(index, name)).parameters)
            assert offered[: len(wanted)] == wanted, (index, name)


def test_the_fronts_ask_questions_never_the_keyword_methods():
    """The keyword methods (kept for the API) are SessionIndex's alone: a front that called
    one would not run on the team index."""
    package = Path(xcsh_store.__file__).parent
    keyword_methods = {"list_sessions", "search", "usage", "history_search", "history_recent"}
    calls = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in keyword_methods
                and ast.unparse(node.func.value) in ("index", "self.index", "self", "team")
            ):
                calls.append(f"{path.relative_to(package)}:{node.lineno}")
    assert calls == []


def test_the_web_usage_page_has_the_filters_of_the_other_pages(flux: Path):
    from starlette.testclient import TestClient

    from xcsh_store.web import create_app

    with SessionIndex.open(str(flux), read_only=True) as index:
        asked = UsageQuery(by=("month",), filter=SessionFilter(project="/work"))
        tokens = sum(row.tokens for row in index.usage_rows(asked))
    with TestClient(create_app(str(flux)), base_url="http://127.0.0.1") as client:
        page = client.get("/usage", params={"project": "/work", "by": "month"}).text
        elsewhere = client.get("/usage", params={"project": "/elsewhere"}).text
        blocks = client.get("/usage", params={"project": "/elsewhere", "by": "block"}).text
    assert '<select name="project">' in page and '<select name="agent">' in page
    assert f">{tokens:,}<" in page.split("<tfoot>", 1)[1]
    assert tokens > 0
    assert '<th>total</th><th class="number">0</th>' in elsewhere
    assert '<th>total</th><th class="number">0</th>' in blocks
    # The other views keep the filters: the links to by week, to cost.
    assert "project=%2Fwork&amp;agent=&amp;since=&amp;by=week" in page


def test_index_db_knows_no_hosts(agent_dir: Path):
    with (
        SessionIndex.open(str(agent_dir)) as index,
        pytest.raises(ValueError, match="host: only a team index"),
    ):
        index.sessions(SessionQuery(filter=SessionFilter(host="laptop")))


# -- both indexes answer them; the keyword methods ask the same --------------------------------


@pytest.fixture
def flux(agent_dir: Path) -> Path:
    write_session(sessions_dir(agent_dir) / "flux.jsonl", flux_records())
    write_session(
        sessions_dir(agent_dir) / "other.jsonl",
        [header("sess-other", cwd="/elsewhere"), message("u9", None, "user", "gigawatts again")],
    )
    with HistoryStorage.open(str(agent_dir / "history.db")) as history:
        history.add("gigawatts again")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


def test_the_keyword_methods_ask_the_question_they_name(flux: Path):
    with SessionIndex.open(str(flux), read_only=True) as index:
        keywords = index.search("gigawatts", project="/work", role="ASSISTANT", limit=5)
        question = SearchQuery(
            text="gigawatts", filter=SessionFilter(project="/work"), role="assistant"
        )
        assert keywords == index.hits(question)[:5] != []
        assert index.list_sessions(project="/elsewhere") == index.sessions(
            SessionQuery(filter=SessionFilter(project="/elsewhere"))
        )
        assert index.usage(("day", "model")) == index.usage_rows(UsageQuery(by=("day", "model")))
        assert index.history_search("gigawatts") == index.prompts(PromptQuery(text="gigawatts"))


def test_usage_of_a_project_sums_only_its_sessions_entries(flux: Path):
    with SessionIndex.open(str(flux), read_only=True) as index:
        (everything,) = index.usage_rows(UsageQuery(by=("agent",)))
        (work,) = index.usage_rows(UsageQuery(by=("agent",), filter=SessionFilter(project="/work")))
        assert work == everything and work.entries > 0
        assert (
            index.usage_rows(UsageQuery(by=("agent",), filter=SessionFilter(cwd="/elsewhere")))
            == []
        )


def test_a_question_with_a_lone_surrogate_is_asked_as_the_index_stores_text(flux: Path):
    with SessionIndex.open(str(flux), read_only=True) as index:
        assert index.sessions(SessionQuery(filter=SessionFilter(cwd="/work/\ud800"))) == []
        assert index.hits(SearchQuery(text="gigawatts \ud800")) == []


# -- every front prints a record with the record's keys ------------------------------------------


def _json(*arguments: str) -> Any:
    result = CliRunner().invoke(cli, [*arguments, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_cli_and_the_mcp_tools_print_a_session_with_the_same_keys(flux: Path):
    (listed, *_) = _json("--agent-dir", str(flux), "ls")
    shown = _json("--agent-dir", str(flux), "show", listed["id"][:8])["session"]
    with SessionIndex.open(str(flux), read_only=True) as index:
        (tool, *_) = tools.list_sessions(index)["sessions"]
        page = tools.get_session(index, listed["path"])
    assert listed["session_id"] == listed["id"] == tool["session"]
    assert set(listed) == set(shown)
    # The tools name each fact once (tools.REPEATED): the session "session" (as every tool's
    # argument names it), its total "tokens", its leaf "leaf_id".
    assert set(tool) == set(listed) - tools.REPEATED | {"session", "tokens", "leaf_id"}
    assert set(tool) - {"tokens"} <= set(page)


def test_the_cli_and_the_mcp_tools_print_a_hit_with_the_same_keys(flux: Path):
    hits = _json("--agent-dir", str(flux), "search", "gigawatts")
    with SessionIndex.open(str(flux), read_only=True) as index:
        found = tools.search_sessions(index, "gigawatts")["hits"]
    assert hits and found
    assert {key for hit in hits for key in hit} - {"on_active_branch"} - tools.REPEATED == {
        key for hit in found for key in hit
    } - {"session"}
    assert [hit["session_id"] for hit in hits] == [hit["session"] for hit in found]


def test_the_cli_and_the_mcp_tools_print_usage_and_prompts_with_the_same_keys(flux: Path):
    usage = _json("--agent-dir", str(flux), "usage", "--by", "model")
    prompts = _json("--agent-dir", str(flux), "history", "search", "gigawatts", "--sessions")
    with SessionIndex.open(str(flux), read_only=True) as index:
        tool_usage = tools.usage(index, "model")
        recalled = tools.recall_prompts(index, "gigawatts")["prompts"]
    assert set(usage["total"]) == set(usage["rows"][0])
    assert (
        set(tool_usage["totals"])
        == set(tool_usage["rows"][0])
        == (set(usage["total"]) - tools.REPEATED | {"tokens", "estimated", "unpriced"})
    )
    assert usage["total"]["total_tokens"] == tool_usage["totals"]["tokens"]
    assert prompts and recalled
    # (A prompt's time is "created", in milliseconds as every time of the tools.)
    assert set(prompts[0]) - {"session_id", "created_at"} == set(recalled[0]) - {"session"}


def test_the_web_usage_page_totals_the_rows_as_usage_does(flux: Path):
    from starlette.testclient import TestClient

    from xcsh_store.web import create_app

    total = _json("--agent-dir", str(flux), "usage")["total"]
    assert total["total_tokens"] > 0
    with TestClient(create_app(str(flux)), base_url="http://127.0.0.1") as client:
        page = client.get("/usage").text
    footer = page.split("<tfoot>", 1)[1]
    assert f">{total['total_tokens']:,}<" in footer
    assert f">{total['entries']:,}<" in footer


def test_the_team_index_prints_each_record_with_the_local_keys_and_its_host(
    two_hosts: dict[str, Path], team_url: str
) -> None:
    folder = two_hosts["laptop"]
    # (Prompts reach the team index at the full tier only: PromptHit.to_json adds the host.)
    for verb in (["ls"], ["search", "word12"]):
        team = _json("--db", team_url, *verb, "--host", "laptop")[:1]
        local = _json("--agent-dir", str(folder), *verb)[:1]
        assert team and local, verb
        assert set(team[0]) == set(local[0]) | {"host"}, verb
    team_usage = _json("--db", team_url, "usage", "--by", "model")
    local_usage = _json("--agent-dir", str(folder), "usage", "--by", "model")
    assert set(team_usage["rows"][0]) == set(local_usage["rows"][0])
    assert set(team_usage["total"]) == set(local_usage["total"])


def test_both_indexes_compile_a_project_filter_of_usage_alike(
    two_hosts: dict[str, Path], team_url: str
) -> None:
    from xcsh_store.team import TeamIndex

    folder = two_hosts["laptop"]
    project = _json("--agent-dir", str(folder), "ls", "-n", "0")[-1]["cwd"]
    with SessionIndex.open(str(folder), read_only=True) as index:
        local = index.usage_rows(UsageQuery(by=("agent",), filter=SessionFilter(project=project)))
    with TeamIndex.open(team_url) as team:
        asked = UsageQuery(by=("agent",), filter=SessionFilter(project=project, host="laptop"))
        assert team.usage_rows(asked) == local != []
