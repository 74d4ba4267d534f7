"""The read verbs over the team index (``--db``): per host, the same answers as the local
index, in the same ``--json`` shapes plus ``host``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers.team_hosts import two_hosts
from session_builder import FIXTURES, PLANTED, planted_host
from team_server import Roles, psycopg

from xcsh_store.cli import cli
from xcsh_store.team import push

__all__ = ["two_hosts"]


def run(*arguments: str) -> Any:
    result = CliRunner().invoke(cli, [*arguments, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def by_path(item: dict[str, Any]) -> str:
    return item["path"]


def without_host(items: list[dict[str, Any]], host: str) -> list[dict[str, Any]]:
    assert all(item.pop("host") == host for item in items)
    return items


def test_ls_of_each_host_equals_its_local_ls(two_hosts: dict[str, Path], team_url: str) -> None:
    for host, folder in two_hosts.items():
        team = run("--db", team_url, "ls", "--limit", "0", "--host", host)
        local = run("--agent-dir", str(folder), "ls", "--limit", "0")
        # Ids shared across hosts (the same fixture files) are shared on the server only.
        for item in team + local:
            item.pop("id_shared")
        assert [item["modified"] for item in team] == [item["modified"] for item in local]
        # Sessions modified at the same moment: the local index orders them by file id.
        assert sorted(without_host(team, host), key=by_path) == sorted(local, key=by_path)
    assert len(run("--db", team_url, "ls", "--limit", "0")) == sum(
        len(run("--agent-dir", str(folder), "ls", "--limit", "0")) for folder in two_hosts.values()
    )


def _hit_keys(hits: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(hit["path"], hit["entry_id"], hit["role"], hit["on_active_branch"]) for hit in hits}


@pytest.mark.parametrize(
    "query", ["word12", "summary", PLANTED[2], "answer marmo", '"first prompt" -zebra']
)
def test_search_of_each_host_finds_what_its_local_search_finds(
    two_hosts: dict[str, Path], team_url: str, query: str
) -> None:
    for host, folder in two_hosts.items():
        team = run("--db", team_url, "search", query, "--host", host, "--limit", "1000")
        local = run("--agent-dir", str(folder), "search", query, "--limit", "1000")
        assert local
        assert _hit_keys(without_host(team, host)) == _hit_keys(local)


def test_search_snippets_mark_the_match(two_hosts: dict[str, Path], team_url: str) -> None:
    (hit,) = run("--db", team_url, "search", PLANTED[2], "--host", "laptop")
    assert f"«{PLANTED[2]}»" in hit["snippet"]


def test_usage_by_host_equals_each_local_usage(two_hosts: dict[str, Path], team_url: str) -> None:
    team = run("--db", team_url, "usage", "--by", "host", "--by", "day", "--by", "model")
    for host, folder in two_hosts.items():
        local = run("--agent-dir", str(folder), "usage", "--by", "day", "--by", "model")["rows"]
        mine = [row for row in team["rows"] if row["keys"][0] == host]
        assert [row["keys"][1:] for row in mine] == [row["keys"] for row in local]
        for ours, theirs in zip(mine, local, strict=True):
            assert ours["entries"] == theirs["entries"]
            assert ours["total_tokens"] == theirs["total_tokens"]
            assert ours["cost"] == pytest.approx(theirs["cost"])


def test_show_rebuilds_branch_tree_and_context(two_hosts: dict[str, Path], team_url: str) -> None:
    session = "planted"
    team = f"laptop:{_path_of(two_hosts['laptop'], session)}"
    local = ["--agent-dir", str(two_hosts["laptop"]), "show", session]
    for view in ([], ["--tree"], ["--context"]):
        ours = run("--db", team_url, "show", team, *view)
        theirs = run(*local, *view)
        assert ours["session"].pop("host") == "laptop"
        for body in (ours, theirs):
            body["session"].pop("id_shared")
        assert ours == theirs


def _path_of(folder: Path, session_id: str) -> str:
    (item,) = [s for s in run("--agent-dir", str(folder), "ls", "-n", "0") if s["id"] == session_id]
    return item["path"]


def test_history_search_reads_every_host(tmp_path: Path, agent_dir: Path, team_url: str) -> None:
    hosts = {"laptop": agent_dir, "ci": tmp_path / "ci"}
    for host, folder in hosts.items():
        for prompt in (f"deploy the {host} build", "unrelated"):
            CliRunner().invoke(cli, ["--agent-dir", str(folder), "history", "add", prompt])
        planted_host(folder)
        push(str(folder), team_url, host=host)
    found = run("--db", team_url, "history", "search", "deplo")
    assert {(hit["host"], hit["prompt"]) for hit in found} == {
        ("laptop", "deploy the laptop build"),
        ("ci", "deploy the ci build"),
    }
    assert len(run("--db", team_url, "history", "recent")) == 4


def test_sql_runs_read_only(two_hosts: dict[str, Path], team_url: str, roles: Roles) -> None:
    reader = roles.run("reader")["xcsh_reader"]  # as docs/security.md says to run it
    rows = run("--db", reader, "sql", "SELECT host, count(*) AS n FROM sessions GROUP BY host"
               " ORDER BY host")  # fmt: skip
    assert [row["host"] for row in rows] == ["ci", "laptop"]
    for url, options in ((reader, []), (team_url, ["--allow-privileged-role"])):
        result = CliRunner().invoke(cli, ["--db", url, "sql", "DELETE FROM sessions", *options])
        assert result.exit_code == 1
        assert "read-only transaction" in result.output
    assert len(run("--db", team_url, "ls", "-n", "0")) == sum(row["n"] for row in rows)


def test_host_options_need_a_team_index(agent_dir: Path) -> None:
    planted_host(agent_dir)
    for arguments in (["ls", "--host", "x"], ["usage", "--by", "host"]):
        result = CliRunner().invoke(cli, arguments)
        assert result.exit_code == 2
        assert "needs a team index: --db postgresql://" in result.output


@pytest.mark.parametrize("since", [None, "2026-01-02", "2026-01-02T00:30:00Z"])
def test_usage_from_the_rollup_and_from_the_entries_agree(
    two_hosts: dict[str, Path], team_url: str, since: str | None
) -> None:
    arguments = ["usage", "--by", "host", "--by", "model", "--by", "week"]
    arguments += ["--since", since] if since else []
    fresh = run("--db", team_url, *arguments)
    with psycopg.connect(team_url) as connection:
        connection.execute("UPDATE hosts SET usage_stale = true WHERE host = 'ci'")
    stale = run("--db", team_url, *arguments)
    assert [_counts(row) for row in stale["rows"]] == [_counts(row) for row in fresh["rows"]]
    local = run("--agent-dir", str(two_hosts["ci"]), "usage", *arguments[3:])["rows"]
    ours = [row for row in fresh["rows"] if row["keys"][0] == "ci"]
    assert [(row["keys"][1:], *_counts(row)[1:]) for row in ours] == [
        (row["keys"], *_counts(row)[1:]) for row in local
    ]


def _counts(row: dict[str, Any]) -> tuple[Any, ...]:
    """A usage row's keys and counts, its cost rounded (sums of floats in another order; null
    when no cost is known: an oh-my-pi line of a model no source prices)."""
    cost = None if row["cost"] is None else round(row["cost"], 9)
    return (row["keys"], row["entries"], row["total_tokens"], cost, row["cost_kind"])


def test_verbs_of_the_local_index_refuse_db(agent_dir: Path) -> None:
    planted_host(agent_dir)
    for verb in (["verify"], ["sync"], ["gc"], ["cat", "artifact://0", "--session", "planted"]):
        result = CliRunner().invoke(cli, ["--db", "postgresql://nowhere/x", *verb])
        assert result.exit_code == 2, result.output
        assert (
            f"--db is for ls, search, show, usage, history, quota, budget and sql; {verb[0]}"
            in result.output
        )


@pytest.fixture
def host_with_claude_and_codex(tmp_path: Path, agent_dir: Path, team_url: str) -> Path:
    """An xcsh agent dir with a Claude Code and a Codex root beside it, pushed as "laptop"."""
    folder = planted_host(agent_dir)
    for agent in ("claude", "codex"):
        root = tmp_path / f"{agent}-root" / "project"
        root.mkdir(parents=True)
        for fixture in sorted((FIXTURES / agent).glob("*.jsonl")):
            (root / fixture.name).write_bytes(fixture.read_bytes())
        run("--agent-dir", str(folder), "sync", "--add-root", f"{agent}:{root.parent}")
    push(str(folder), team_url, host="laptop")
    return folder


def test_other_agents_sessions_read_the_same_on_the_team_index(
    host_with_claude_and_codex: Path, team_url: str
) -> None:
    local_dir = ["--agent-dir", str(host_with_claude_and_codex)]
    for agent in ("claude", "codex", "xcsh"):
        team = run("--db", team_url, "ls", "-n", "0", "--agent", agent)
        local = run(*local_dir, "ls", "-n", "0", "--agent", agent)
        assert local and {item["agent"] for item in team} == {agent}
        for item in team + local:
            item.pop("id_shared")
        assert sorted(without_host(team, "laptop"), key=by_path) == sorted(local, key=by_path)
    team_hits = run("--db", team_url, "search", "error", "--agent", "codex", "-n", "1000")
    local_hits = run(*local_dir, "search", "error", "--agent", "codex", "-n", "1000")
    assert local_hits and {hit["agent"] for hit in team_hits} == {"codex"}
    assert _hit_keys(without_host(team_hits, "laptop")) == _hit_keys(local_hits)
    fields = (
        "keys", "entries", "total_tokens", "estimated_cost_entries", "unpriced_entries",
        "cost_kind", "unpriced_sessions",
    )  # fmt: skip
    team_usage = run("--db", team_url, "usage", "--by", "agent", "--by", "model")["rows"]
    local_usage = run(*local_dir, "usage", "--by", "agent", "--by", "model")["rows"]
    assert [[row[field] for field in fields] for row in team_usage] == [
        [row[field] for field in fields] for row in local_usage
    ]
    assert [_counts(row) for row in team_usage] == [_counts(row) for row in local_usage]
    claude = run("--db", team_url, "usage", "--by", "agent", "--agent", "claude")["rows"]
    assert [row["key"] for row in claude] == ["claude"] and claude[0]["estimated_cost_entries"]


def test_a_claude_code_session_is_rebuilt_on_the_team_index(
    host_with_claude_and_codex: Path, team_url: str
) -> None:
    session = "robcmills__cc.nvim__compact_boundary"
    for view in (["--tree"], ["--context"]):
        ours = run("--db", team_url, "show", session, *view)
        theirs = run("--agent-dir", str(host_with_claude_and_codex), "show", session, *view)
        assert ours["session"].pop("host") == "laptop"
        for body in (ours, theirs):
            body["session"].pop("id_shared")
        assert ours == theirs


def test_a_model_or_project_no_host_has_is_named_as_on_the_local_index(
    two_hosts: dict[str, Path], team_url: str
) -> None:
    for option, value in (("--model", "gpt-9"), ("--project", "nope")):
        result = CliRunner().invoke(cli, ["--db", team_url, "search", "word12", option, value])
        assert result.exit_code == 2 and f"Invalid value for {option}: no " in result.stderr
    known = run("--db", team_url, "search", "word12", "--model", "anthropic/claude-test")
    assert known == run("--db", team_url, "search", "word12", "--model", "claude-test") != []


def test_ls_since_and_until_filter_the_team_index_as_the_local_one(
    two_hosts: dict[str, Path], team_url: str
) -> None:
    folder = two_hosts["laptop"]
    for span in (["--since", "2000-01-01"], ["--until", "2000-01-01"], ["--since", "9000-01-01"]):
        team = run("--db", team_url, "ls", "-n", "0", "--host", "laptop", *span)
        local = run("--agent-dir", str(folder), "ls", "-n", "0", *span)
        assert sorted(item["path"] for item in team) == sorted(item["path"] for item in local)
    assert run("--db", team_url, "ls", "-n", "0", "--since", "2000-01-01")


def test_the_usage_of_each_entry_is_the_same_on_the_team_index(
    host_with_claude_and_codex: Path, team_url: str
) -> None:
    """Per-message tokens and cost (issue 38 item 3): each response once, as index.db has it."""
    from xcsh_store.index import SessionIndex
    from xcsh_store.team.reader import TeamIndex

    with (
        SessionIndex.open(str(host_with_claude_and_codex), read_only=True) as local,
        TeamIndex.open(team_url) as team,
    ):
        compared = 0
        for session in local.list_sessions(agents=["claude", "codex"]):
            ours = team.entry_usage(team.find_session(session.path))
            theirs = local.entry_usage(session)
            assert ours.keys() == theirs.keys(), session.path
            for entry_id, usage in theirs.items():
                assert ours[entry_id].context_tokens == usage.context_tokens
                assert ours[entry_id].output_tokens == usage.output_tokens
                assert ours[entry_id].cost == pytest.approx(usage.cost)
            compared += len(theirs)
    assert compared > 100
