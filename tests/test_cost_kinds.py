"""Unknown is never $0 (issue 35, item 2), on the real fixtures: a cost is free (``$0``),
unknown (``?``), not recorded (``–``), estimated (``~``) or recorded, in ``ls``, ``show``,
``usage``, ``--json`` (``cost`` null and ``cost_kind``), the web pages and the MCP tools; a
recorded $0 below list price is shown with its list price beside it; totals say what they
leave out.

Each expected dollar figure is worked out here from the file's tokens and the vendor's list
price (per million tokens), not asked of the pricing code."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from agent_homes import lay_out_agents
from helpers.cli_runs import run, run_json
from helpers.opencode_export import SESSION_ID, reseller_export, write_reseller_export
from real_home import FIXTURES, RealHome

from xcsh_store.agent_tools import tools
from xcsh_store.index import SessionIndex
from xcsh_store.team import push

if TYPE_CHECKING:
    from starlette.testclient import TestClient

AMP = FIXTURES / "amp"
AIDER = FIXTURES / "aider"
CAP_ID = SESSION_ID


def cap_list_price() -> float:
    """What Cap's packyapi/gpt-5.6-sol messages cost at OpenAI's list price in July 2026 ($5
    input, $30 output (reasoning billed as output), $0.50 cached input; none over the 272K
    long-context threshold: checked below)."""
    document = reseller_export()
    total = 0.0
    for message in document["messages"]:
        info = message["info"]
        if info["role"] != "assistant" or info.get("modelID") != "gpt-5.6-sol":
            continue
        tokens = info["tokens"]
        read = tokens["cache"]["read"]
        assert tokens["input"] + read + tokens["cache"]["write"] <= 272_000
        output = tokens["output"] + tokens.get("reasoning", 0)
        total += (tokens["input"] * 5 + output * 30 + read * 0.5) / 1e6
    return total


def glm_list_price() -> float:
    """Cap's zhipuai-coding-plan/glm-5.2 messages at Zhipu's list price in genai-prices 0.2.5
    ($1.103 input, $3.862 output, $0.276 cached input)."""
    document = reseller_export()
    total = 0.0
    for message in document["messages"]:
        info = message["info"]
        if info["role"] == "assistant" and info.get("modelID") == "glm-5.2":
            tokens = info["tokens"]
            output = tokens["output"] + tokens.get("reasoning", 0)
            read = tokens["cache"]["read"]
            total += (tokens["input"] * 1.103 + output * 3.862 + read * 0.276) / 1e6
    return total


@pytest.fixture
def cap(agent_dir: Path, tmp_path: Path) -> Path:
    """Cap's opencode export in a folder of shared sessions (a root ``opencode:DIR``); synced."""
    folder = tmp_path / "shared"
    folder.mkdir()
    write_reseller_export(folder / "opencode-session.json")
    run(agent_dir, "sync", "--init", "--add-root", f"opencode:{folder}")
    return folder


def test_a_recorded_zero_of_a_paid_model_shows_its_list_price_beside_it(agent_dir: Path, cap: Path):
    """opencode records ``cost: 0`` for a reseller's and a subscription's requests: the $0 is
    what was recorded, and the list price stands beside it, never summed into it."""
    (listed,) = run_json(agent_dir, "ls")
    at_list = cap_list_price() + glm_list_price()
    assert cap_list_price() > glm_list_price() > 0
    assert (listed["cost"], listed["cost_kind"]) == (0, "recorded")
    assert listed["cost_at_list_price"] == pytest.approx(at_list)
    assert listed["cost_estimated"] is False
    assert f"$0/~${at_list:,.2f}" in run(agent_dir, "ls")
    shown = run(agent_dir, "show", CAP_ID)
    assert f"$0 recorded, ~${at_list:,.2f} at list price" in " ".join(shown.split())

    rows = {row["key"]: row for row in run_json(agent_dir, "usage", "--by", "model")["rows"]}
    sol = rows["packyapi/gpt-5.6-sol"]
    assert (sol["cost"], sol["cost_kind"]) == (0, "recorded")
    assert sol["cost_at_list_price"] == pytest.approx(cap_list_price())
    text = run(agent_dir, "usage", "--by", "model")
    assert f"at list price the total is ~${at_list:,.2f}" in " ".join(text.split())


def test_a_pi_line_without_a_cost_is_estimated_not_a_recorded_zero(
    agent_dir: Path, real_home: RealHome
):
    """pi writes ``usage.cost`` with each response; a line without it was not recorded: the
    index prices its tokens (claude-sonnet-4: $3 input, $15 output, $0.30 cache reads, $3.75
    cache writes) and says so (``~``)."""
    source = FIXTURES / "pi" / "sheurich__episodic-memory__pi-session.jsonl"
    expected = 0.0
    for line in source.read_text().splitlines():
        message = json.loads(line).get("message") or {}
        usage = message.get("usage")
        if message.get("role") == "assistant" and usage:
            assert "cost" not in usage
            expected += (
                usage.get("input", 0) * 3 + usage.get("output", 0) * 15
                + usage.get("cacheRead", 0) * 0.3 + usage.get("cacheWrite", 0) * 3.75
            ) / 1e6  # fmt: skip
    assert expected > 0
    run(agent_dir, "sync", "--init")
    listed = {row["id"]: row for row in run_json(agent_dir, "ls", "-n", "0")}
    pi = listed["test-pi-session-001"]
    assert (pi["cost_kind"], pi["cost_estimated"]) == ("estimated", True)
    assert pi["cost"] == pytest.approx(expected)
    line = next(line for line in run(agent_dir, "ls", "-n", "0").splitlines() if "test-pi" in line)
    assert f"~${expected:.4f}" in line if expected < 0.01 else f"~${expected:,.2f}" in line


def test_free_and_unknown_are_told_apart(agent_dir: Path, real_home: RealHome):
    """An OpenRouter ``:free`` model costs $0 (free); a session whose only line is a
    ``<synthetic>`` one (Claude Code's own message, no request) too; a model no source prices
    is unknown (``?``, null), never $0."""
    run(agent_dir, "sync", "--init")
    listed = {row["id"]: row for row in run_json(agent_dir, "ls", "-n", "0")}
    free = next(row for row in listed.values() if row["id"].startswith("01131ba6"))
    assert (free["cost"], free["cost_kind"]) == (0, "free")
    synthetic = next(row for row in listed.values() if row["id"].startswith("2ef7e415"))
    assert (synthetic["cost"], synthetic["cost_kind"]) == (0, "free")
    by_model = run_json(agent_dir, "usage", "--by", "model")["rows"]
    free_row = next(row for row in by_model if row["key"].endswith(":free"))
    assert (free_row["cost"], free_row["cost_kind"]) == (0, "free")
    table = run(agent_dir, "ls", "-n", "0")
    free_line = next(line for line in table.splitlines() if line.startswith("01131ba6"))
    assert " $0 " in free_line + " "


def test_sessions_without_usage_are_not_recorded_not_zero(agent_dir: Path, tmp_path: Path):
    """Cursor's and Droid's transcripts, Amp threads without usage and an Aider run without a
    ``Tokens:`` line hold no usage: their cost is not recorded (``–``, null), not ``~$0``."""
    home = Path(os.environ["HOME"])
    lay_out_agents(home, ("cursor", "droid"))
    threads = Path(os.environ["AMP_DATA_DIR"]) / "threads"
    threads.mkdir(parents=True)
    for source in AMP.glob("*.json"):
        shutil.copyfile(source, threads / source.name)
    repository = tmp_path / "repos" / "zen"
    repository.mkdir(parents=True)
    aider = AIDER / "BeehiveInnovations__zen-mcp-server__.aider.chat.history.md"
    assert "Tokens:" not in aider.read_text()
    shutil.copyfile(aider, repository / ".aider.chat.history.md")
    run(agent_dir, "sync", "--init", "--add-root", f"aider:{tmp_path / 'repos'}")
    listed = run_json(agent_dir, "ls", "-n", "0")
    agents = {row["agent"] for row in listed}
    assert {"cursor", "droid", "amp", "aider"} <= agents
    silent = [row for row in listed if row["total_tokens"] == 0]
    assert {row["agent"] for row in silent} >= {"cursor", "droid", "aider"}
    for row in silent:
        assert (row["cost"], row["cost_kind"]) == (None, "not_recorded"), row["id"]
    table = run(agent_dir, "ls", "-n", "0")
    for row in silent:
        line = next(line for line in table.splitlines() if line.startswith(row["id"][:8]))
        assert "–" in line and "$0" not in line, line


def test_a_usage_total_says_how_many_sessions_it_leaves_out(agent_dir: Path):
    """Qwen Code's ``coder-model`` has no price anywhere: the total is the known costs plus
    the sessions left out."""
    lay_out_agents(Path(os.environ["HOME"]), ("qwen", "gemini"))
    run(agent_dir, "sync", "--init")
    answer = run_json(agent_dir, "usage", "--by", "agent")
    rows = {row["key"]: row for row in answer["rows"]}
    assert (rows["qwen"]["cost"], rows["qwen"]["cost_kind"]) == (None, "unknown")
    assert rows["gemini"]["cost_kind"] == "estimated"
    total = answer["total"]
    assert (total["cost_kind"], total["unpriced_sessions"]) == ("partial", 1)
    gemini = rows["gemini"]["cost"]
    text = " ".join(run(agent_dir, "usage", "--by", "agent").split())
    assert f"total ~${gemini:.4f} + 1 session unpriced" in text


def test_the_web_pages_and_mcp_show_the_same_kinds(
    agent_dir: Path, cap: Path, real_home: RealHome, client: TestClient
):
    run(agent_dir, "sync")
    at_list = cap_list_price() + glm_list_price()
    listing = client.get("/", params={"agent": "opencode"}).text
    assert f"$0/~${at_list:,.2f}" in listing
    page = client.get(f"/session/{CAP_ID}").text
    assert f"$0 recorded, ~${at_list:,.2f} at list price" in " ".join(page.split())
    pi = client.get("/session/test-pi-session-001").text
    assert 'title="estimated">~$' in pi
    usage = " ".join(client.get("/usage", params={"by": "day"}).text.split())
    # Cap's day (2026-07-17) holds its requests alone.
    assert f'<span title="recorded">$0/~${at_list:,.2f}</span>' in usage
    # The total says what it leaves out (the oh-my-pi session of an unpriced model).
    assert "+ 1 session unpriced</th>" in usage
    with SessionIndex.open(str(agent_dir)) as index:
        found: dict[str, Any] = tools.list_sessions(index, limit=200)
        by_id = {row["session"]: row for row in found["sessions"]}
        assert by_id[CAP_ID]["cost_kind"] == "recorded"
        assert by_id[CAP_ID]["cost_at_list_price"] == pytest.approx(at_list, abs=1e-4)
        pi = by_id["test-pi-session-001"]
        assert (pi["cost_kind"], pi["cost"] > 0) == ("estimated", True)
        usage = tools.usage(index, by="model")
        sol = next(row for row in usage["rows"] if row["key"] == "packyapi/gpt-5.6-sol")
        assert (sol["cost"], sol["cost_kind"]) == (0, "recorded")


def test_the_team_index_keeps_how_each_cost_is_known(
    agent_dir: Path, cap: Path, real_home: RealHome, team_url: str
):
    """Pushed to the team index (PostgreSQL, team migration 0007), every session and usage
    row says what the local index says: kinds, nulls and list prices."""
    run(agent_dir, "sync")
    push(str(agent_dir), team_url, host="laptop")
    for agent in ("opencode", "pi", "omp", "claude"):
        team = run_json(agent_dir, "--db", team_url, "ls", "-n", "0", "--agent", agent)
        local = run_json(agent_dir, "ls", "-n", "0", "--agent", agent)
        keys = ("id", "cost", "cost_kind", "cost_at_list_price", "unpriced_entries")
        assert sorted(_rounded(row, keys) for row in team) == sorted(
            _rounded(row, keys) for row in local
        )
    team = {row["id"]: row for row in run_json(agent_dir, "--db", team_url, "ls", "-n", "0")}
    assert team[CAP_ID]["cost_at_list_price"] == pytest.approx(cap_list_price() + glm_list_price())
    keys = ("key", "cost_kind", "unpriced_entries", "unpriced_sessions", "estimated_cost_entries")
    by_model = run_json(agent_dir, "--db", team_url, "usage", "--by", "model")["rows"]
    local = run_json(agent_dir, "usage", "--by", "model")["rows"]
    assert [_rounded(row, keys) for row in by_model] == [_rounded(row, keys) for row in local]
    sol = next(row for row in by_model if row["key"] == "packyapi/gpt-5.6-sol")
    assert sol["cost_at_list_price"] == pytest.approx(cap_list_price())


def _rounded(row: dict[str, Any], keys: tuple[str, ...]) -> tuple[Any, ...]:
    """The values of ``keys``, dollars rounded (sums of floats added in another order)."""
    return tuple(round(row[key], 9) if isinstance(row[key], float) else row[key] for key in keys)


def test_a_listing_sums_each_sessions_cost_facts_from_one_covering_index(
    agent_dir: Path, real_home: RealHome
):
    """``ls`` reads every listed session's cost facts: from migration 0017's entries_costs
    alone, never the entries table."""
    from xcsh_store.index.read.sessions import _DETAILS

    run(agent_dir, "sync", "--init")
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        plan = index.connection.execute(
            f"EXPLAIN QUERY PLAN SELECT {_DETAILS[-1]} FROM sessions AS s"
        ).fetchall()
    assert any("USING COVERING INDEX entries_costs" in row[3] for row in plan), plan
