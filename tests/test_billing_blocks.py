"""Claude's 5-hour billing windows (``usage --by block``), as ccusage's ``blocks`` finds them:
a window starts at its first request's hour (UTC) and lasts five hours; a request past its end,
or more than five hours after the request before it, starts the next; a gap row stands between
windows more than five hours apart; the active window has a burn rate and a projection."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.cli import cli


def answer(number: int, at: str) -> dict:
    """An assistant reply at ``at`` (10 input, 5 output, 1 cache read, 2 cache write; $0.30)."""
    return message(f"a{number}", None, "assistant", "ok") | {"timestamp": at}


def requests(agent_dir, times: list[str]) -> None:
    records = [header("s")] + [answer(number, at) for number, at in enumerate(times)]
    write_session(sessions_dir(agent_dir) / "s.jsonl", records)


def starts(blocks) -> list[tuple[str, bool, int]]:
    return [(block.start.strftime("%d %H:%M"), block.gap, block.usage.entries) for block in blocks]


def test_a_window_starts_at_its_first_requests_hour_and_lasts_five_hours(agent_dir, index):
    # 10:42 opens the 10:00 window; 14:59 is inside it; 15:00 is not (the window ended).
    requests(agent_dir, ["2026-01-01T10:42:00Z", "2026-01-01T14:59:00Z", "2026-01-01T15:01:00Z"])
    index.sync()
    assert starts(index.billing_blocks()) == [("01 10:00", False, 2), ("01 15:00", False, 1)]


def test_a_gap_of_more_than_five_hours_closes_a_window(agent_dir, index):
    requests(agent_dir, ["2026-01-01T10:00:00Z", "2026-01-01T10:30:00Z", "2026-01-01T16:31:00Z"])
    index.sync()
    blocks = index.billing_blocks()
    # The idle time from five hours after the last request to the next one is a gap row.
    assert starts(blocks) == [("01 10:00", False, 2), ("01 15:30", True, 0), ("01 16:00", False, 1)]
    assert blocks[1].end == datetime(2026, 1, 1, 16, 31, tzinfo=UTC)


def test_windows_sum_their_requests(agent_dir, index):
    requests(agent_dir, ["2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z"])
    index.sync()
    (block,) = index.billing_blocks()
    usage = block.usage
    assert (usage.input_tokens, usage.output_tokens, usage.tokens) == (20, 10, 36)
    assert round(usage.cost, 6) == 0.6 and block.models == ("anthropic/claude-test",)
    assert block.tokens_per_minute == pytest.approx(36 / 60)
    assert block.cost_per_hour == pytest.approx(0.6)


def test_the_active_window_has_a_burn_rate_and_a_projection(agent_dir, index):
    requests(agent_dir, ["2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z"])
    index.sync()
    now = datetime(2026, 1, 1, 13, 0, tzinfo=UTC)
    (block,) = index.billing_blocks(now=now)
    assert block.active and block.remaining_minutes == 120
    # 36 tokens in 60 minutes of activity: 120 minutes more at that rate make 72 more.
    assert block.projected_tokens == 36 + 72
    assert block.projected_cost == pytest.approx(0.6 + 1.2)
    (later,) = index.billing_blocks(now=now + timedelta(hours=3))
    assert not later.active and later.projected_tokens is None


def test_usage_by_block_on_the_command_line(agent_dir, index, tmp_path):
    requests(agent_dir, ["2026-01-01T10:00:00Z", "2026-01-01T16:30:00Z"])
    index.sync()
    runner = CliRunner()
    result = runner.invoke(cli, ["usage", "--by", "block", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)["blocks"]
    assert [(block["start"], block["gap"]) for block in shown] == [
        ("2026-01-01T10:00:00+00:00", False),
        ("2026-01-01T15:00:00+00:00", True),
        ("2026-01-01T16:00:00+00:00", False),
    ]
    page = tmp_path / "blocks.html"
    result = runner.invoke(
        cli, ["usage", "--by", "block", "--timezone", "UTC", "--html", str(page)]
    )
    assert result.exit_code == 0, result.output
    assert "2026-01-01 10:00" in result.output and "gap" in result.output
    assert "2026-01-01 16:00" in page.read_text()


def test_usage_by_block_groups_alone(agent_dir):
    result = CliRunner().invoke(cli, ["usage", "--by", "block", "--by", "model"])
    assert result.exit_code == 2 and "--by block groups alone" in result.output
