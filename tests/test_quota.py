"""Quotas from the files (issue 37): Codex's ``rate_limits`` in every form the real fixtures
hold (and the two older forms Codex's source wrote), stored per reading in index.db
(quota_observations), and ``xcsh-store quota``: each window's use, reset, pace and age; Claude
Code's windows in tokens against a configured or calibrated limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from real_home import FIXTURES, lay_out_home

from xcsh_store.agents.codex import rate_limit_readings
from xcsh_store.index import SessionIndex
from xcsh_store.times import iso_millis, parse_iso

CODEX = FIXTURES / "codex"
ACIDIC = (
    "AcidicSoil__codex-session-view__rollout-2025-11-17T15-30-28"
    "-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)
AKASH = "AkashJana18__edgerunner__codex-session.jsonl"


def fixture_limits() -> list[tuple[str, dict, str]]:
    """Every ``rate_limits`` object of the Codex fixtures: (file name, object, line time)."""
    found = []
    for path in sorted(CODEX.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                continue
            payload = value.get("payload") if isinstance(value, dict) else None
            if isinstance(payload, dict) and "rate_limits" in payload:
                found.append((path.name, payload["rate_limits"], value["timestamp"]))
    return found


def windows_in(limits: dict) -> list[tuple[str, dict]]:
    """The windows of a nested object that have a percent (what a reading is made of)."""
    return [
        (slot, limits[slot])
        for slot in ("primary", "secondary")
        if isinstance(limits.get(slot), dict) and "used_percent" in limits[slot]
    ]


def test_the_fixtures_hold_303_rate_limit_objects_in_five_files():
    limits = fixture_limits()
    assert len(limits) == 303
    assert len({name for name, _limits, _at in limits}) == 5


def test_every_fixture_form_is_read_window_by_window():
    for name, limits, at in fixture_limits():
        readings = rate_limit_readings(limits, at)
        expected = windows_in(limits)
        assert [reading.slot for reading in readings] == [slot for slot, _ in expected], name
        for reading, (_slot, window) in zip(readings, expected, strict=True):
            assert reading.used_percent == window["used_percent"]
            assert reading.window_minutes == window["window_minutes"]
            # resets_at is epoch seconds.
            assert parse_iso(reading.resets_at).timestamp() == window["resets_at"]
            assert reading.limit_id == limits.get("limit_id")
            assert reading.plan_type == limits.get("plan_type")


def test_null_windows_are_no_readings():
    # uzaxirr's 36 objects: a limit with both windows null (not reported yet).
    nulls = [limits for name, limits, _at in fixture_limits() if name.startswith("uzaxirr")]
    assert len(nulls) == 36
    assert all(rate_limit_readings(limits, "2026-03-12T15:10:41.870Z") == () for limits in nulls)


def test_the_relative_reset_of_codex_0_4x_is_placed_from_the_line_time():
    # codex-rs RateLimitWindow before resets_at: resets_in_seconds.
    limits = {"primary": {"used_percent": 5, "window_minutes": 300, "resets_in_seconds": 600}}
    (reading,) = rate_limit_readings(limits, "2025-10-01T10:00:00.000Z")
    assert (reading.used_percent, reading.resets_at) == (5.0, "2025-10-01T10:10:00.000Z")


def test_the_flat_form_before_it_is_read_too():
    # codex-rs RateLimitSnapshotEvent (September 2025): flat fields, the reset as an offset.
    limits = {
        "primary_used_percent": 12.5,
        "secondary_used_percent": 40.0,
        "primary_to_secondary_ratio_percent": 75.0,
        "primary_window_minutes": 300,
        "secondary_window_minutes": 10080,
        "primary_reset_after_seconds": 3600,
    }
    primary, secondary = rate_limit_readings(limits, "2025-09-27T15:00:00Z")
    assert (primary.slot, primary.used_percent, primary.window_minutes) == ("primary", 12.5, 300)
    assert primary.resets_at == "2025-09-27T16:00:00.000Z"
    assert (secondary.used_percent, secondary.window_minutes, secondary.resets_at) == (
        40.0,
        10080,
        None,
    )


@pytest.mark.parametrize(
    "limits",
    [
        None,
        [],
        {"primary": {"used_percent": "12"}},
        {"primary": {"used_percent": float("nan")}},
        {"primary": {"used_percent": 3, "window_minutes": True, "resets_at": -5}},
    ],
)
def test_what_is_not_a_reading_is_skipped_or_left_unknown(limits):
    readings = rate_limit_readings(limits, "2026-01-01T00:00:00Z")
    assert all(reading.window_minutes is None and reading.resets_at is None for reading in readings)


def synced(agent_dir: Path) -> SessionIndex:
    index = SessionIndex.open(str(agent_dir))
    index.sync()
    return index


def stored(index: SessionIndex) -> dict[str, int]:
    rows = index.connection.execute(
        "SELECT f.path, count(*) FROM quota_observations AS q JOIN files AS f ON f.id = q.file_id"
        " GROUP BY f.path"
    ).fetchall()
    return {Path(path).name: count for path, count in rows}


def test_a_sync_stores_each_window_of_each_reading(agent_dir, real_home):
    expected: dict[str, int] = {}
    for name, limits, _at in fixture_limits():
        expected[name] = expected.get(name, 0) + len(windows_in(limits))
    expected = {name: count for name, count in expected.items() if count}
    with synced(agent_dir) as index:
        by_file = stored(index)
        assert {name: by_file[real_home.files[name].name] for name in expected} == expected
        assert sum(by_file.values()) == sum(expected.values()) == 521
        # Nothing changed: a sync again neither adds nor loses a reading; verify agrees.
        index.sync()
        assert stored(index) == by_file
        assert index.verify().differences == {}


def test_readings_stay_with_an_archived_session(agent_dir, real_home):
    gone = real_home.files[AKASH]
    with synced(agent_dir) as index:
        gone.unlink()
        index.sync()
        # The archive keeps the gone session, its usage and its readings (docs/archive.md).
        assert stored(index)[gone.name] == 350


def test_readings_go_with_their_files_rows(agent_dir, real_home):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[agents.codex]\narchive = false\n")
    gone = real_home.files[AKASH]
    with synced(agent_dir) as index:
        gone.unlink()
        index.sync()
        assert gone.name not in stored(index) and len(stored(index)) == 3


def one_codex_file(agent_dir: Path, name: str) -> None:
    laid_out = lay_out_home(agent_dir.parent / "home")
    for fixture, path in laid_out.files.items():
        if fixture != name:
            path.unlink()


def test_the_newest_reading_of_each_window_with_its_pace(agent_dir):
    one_codex_file(agent_dir, ACIDIC)
    newest = [(at, limits) for name, limits, at in fixture_limits() if name == ACIDIC][-1]
    at = parse_iso(newest[0])
    now = at + timedelta(minutes=1)
    with synced(agent_dir) as index:
        windows = {window.label: window for window in index.quota(now=now)}
    assert set(windows) == {"5-hour", "weekly"}
    for label, slot in (("5-hour", "primary"), ("weekly", "secondary")):
        window, read = windows[label], newest[1][slot]
        assert (window.agent, window.slot, window.used_percent) == (
            "codex",
            slot,
            read["used_percent"],
        )
        assert window.resets_at.timestamp() == read["resets_at"]
        assert window.observed_at == at and window.age_seconds == 60 and not window.stale
        # The pace: the average since the window began (its reset less its length).
        start = read["resets_at"] - read["window_minutes"] * 60
        rate = read["used_percent"] / (at.timestamp() - start)
        full = at.timestamp() + (100 - read["used_percent"]) / rate
        if full < read["resets_at"]:
            assert window.pace == "will fill"
            assert window.full_at.timestamp() == pytest.approx(full, abs=0.01)
        else:
            assert (window.pace, window.full_at) == ("within limits", None)
    # 64 % three hours into five: full twenty minutes before the reset.
    assert windows["5-hour"].pace == "will fill"


def test_a_reading_of_a_window_that_has_reset_says_so_and_how_old_it_is(agent_dir):
    one_codex_file(agent_dir, ACIDIC)
    now = datetime(2025, 12, 1, tzinfo=UTC)
    with synced(agent_dir) as index:
        windows = index.quota(now=now, agents=("codex",))
    assert windows and all(window.reset_since and window.stale for window in windows)
    assert all(window.pace == "unknown" for window in windows)
    last = parse_iso(fixture_limits_at(ACIDIC)[-1])
    assert {window.age_seconds for window in windows} == {(now - last).total_seconds()}


def fixture_limits_at(name: str) -> list[str]:
    return [at for fixture, _limits, at in fixture_limits() if fixture == name]


def claude_only(agent_dir: Path) -> None:
    laid_out = lay_out_home(agent_dir.parent / "home")
    for path in laid_out.files.values():
        if ".claude" not in path.parts:
            path.unlink()


def test_claudes_five_hour_window_is_the_active_block_against_the_largest_before(agent_dir):
    claude_only(agent_dir)
    with synced(agent_dir) as index:
        blocks = [block for block in index.billing_blocks() if not block.gap]
        biggest = max(blocks, key=lambda block: block.usage.tokens)
        now = biggest.last + timedelta(seconds=1)
        active = [
            block for block in index.billing_blocks(now=now) if block.active and block.start <= now
        ]
        assert [block.start for block in active] == [biggest.start]
        windows = {window.label: window for window in index.quota(now=now, agents=("claude",))}
    five = windows["5-hour"]
    others = [block.usage.tokens for block in blocks if block.start != biggest.start]
    assert (five.used_tokens, five.limit_tokens, five.source) == (
        biggest.usage.tokens,
        max(others),
        "calibrated",
    )
    assert five.used_percent == pytest.approx(biggest.usage.tokens / max(others) * 100)
    assert five.resets_at == biggest.end


def test_a_configured_limit_wins_over_calibration(agent_dir):
    claude_only(agent_dir)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[quota.claude]\nfive_hour_tokens = 1_000_000\nweekly_tokens = 5_000_000\n")
    with synced(agent_dir) as index:
        block = max((b for b in index.billing_blocks() if not b.gap), key=lambda b: b.usage.tokens)
        now = block.last + timedelta(seconds=1)
        windows = {window.label: window for window in index.quota(now=now, agents=("claude",))}
        week = index.connection.execute(
            "SELECT sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)"
            " + coalesce(cache_read_tokens, 0) + coalesce(cache_write_tokens, 0))"
            " FROM usage_entries WHERE agent = 'claude' AND timestamp >= ? AND timestamp < ?",
            (iso_millis(now - timedelta(days=7)), iso_millis(now)),
        ).fetchone()[0]
    five, weekly = windows["5-hour"], windows["weekly"]
    assert (five.limit_tokens, five.source) == (1_000_000, "configured")
    assert five.used_percent == pytest.approx(block.usage.tokens / 10_000)
    assert (weekly.limit_tokens, weekly.used_tokens) == (5_000_000, week)
    # Used up: full now, until the window's end.
    assert five.pace == "full" and five.full_at == now


def run(agent_dir: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"COLUMNS": "160"},
    )


def test_quota_json_and_table_in_a_real_process(agent_dir, real_home):
    assert run(agent_dir, "sync", "--init").returncode == 0
    result = run(agent_dir, "quota", "--json")
    assert result.returncode == 0, result.stderr
    windows = json.loads(result.stdout)["windows"]
    codex = [window for window in windows if window["agent"] == "codex"]
    # Five Codex files read, two windows each: the newest reading per window (Akash's, 2026).
    assert [(w["window"], w["plan_type"], w["limit_id"]) for w in codex] == [
        ("5-hour", "plus", "codex"),
        ("weekly", "plus", "codex"),
    ]
    assert all(window["stale"] and window["reset_since"] for window in codex)
    table = run(agent_dir, "quota")
    assert table.returncode == 0, table.stderr
    assert "codex (plus)" in table.stdout and "days ago" in table.stdout


def test_a_config_that_says_nonsense_is_one_line(agent_dir, real_home):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[quota.claude]\nfive_hour_tokens = -3\n")
    assert run(agent_dir, "sync", "--init").returncode == 0
    result = run(agent_dir, "quota")
    assert result.returncode != 0
    assert "five_hour_tokens must be a token count" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_mcp_tool_answers_what_quota_json_does(agent_dir, real_home):
    from mcp_client import call_tools

    with synced(agent_dir):
        pass
    tools, [answer, codex_only] = call_tools(
        agent_dir, [("quota", {}), ("quota", {"agent": "codex"})]
    )
    assert "quota" in tools
    cli = json.loads(run(agent_dir, "--no-sync", "quota", "--json").stdout)["windows"]
    strip = lambda windows: [  # noqa: E731 (the clock-bound fields differ by a moment)
        {k: v for k, v in window.items() if k not in ("age_seconds", "observed_at")}
        for window in windows
    ]
    assert strip(answer["windows"]) == strip(cli)
    assert {window["agent"] for window in codex_only["windows"]} == {"codex"}


def test_the_usage_page_shows_the_limits(agent_dir, real_home, client):
    with synced(agent_dir):
        pass
    page = client.get("/usage").text
    assert "<h2>Usage limits</h2>" in page
    assert "codex (plus)" in page and "5-hour" in page and "weekly" in page
    assert "not read since" in page  # the fixtures' windows have all reset since
