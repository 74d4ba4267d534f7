"""``usage`` grouped by several keys at once (``--by day --by model``), in the library and the
command line: one row per combination, never silently the last ``--by``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex

# (day, provider, model) of each assistant message.
REPLIES = [
    ("2026-01-01", "anthropic", "claude-test"),
    ("2026-01-01", "openai", "gpt-5"),
    ("2026-01-01", "openai", "gpt-5"),
    ("2026-01-02", "openai", "gpt-5"),
]


@pytest.fixture
def indexed(agent_dir: Path) -> Path:
    records: list[dict] = [header("0199cccc-usage")]
    parent = None
    for number, (day, provider, model) in enumerate(REPLIES):
        entry = message(f"r{number:07d}", parent, "assistant", "ok", provider=provider, model=model)
        entry["timestamp"] = f"{day}T10:00:0{number}.000Z"
        records.append(entry)
        parent = entry["id"]
    write_session(sessions_dir(agent_dir) / "2026-01-01T00-00-00-000Z_usage.jsonl", records)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


def usage_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["usage", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_library_groups_by_several_keys(indexed):
    with SessionIndex.open(str(indexed), read_only=True) as index:
        rows = index.usage(by=("day", "model"))
    assert [(row.keys, row.entries) for row in rows] == [
        (("2026-01-01", "anthropic/claude-test"), 1),
        (("2026-01-01", "openai/gpt-5"), 2),
        (("2026-01-02", "openai/gpt-5"), 1),
    ]
    assert rows[0].key == "2026-01-01 · anthropic/claude-test"


def test_by_day_by_model_gives_a_row_per_day_and_model(indexed):
    report = usage_json("--by", "day", "--by", "model")
    assert report["by"] == "day,model" and report["group_by"] == ["day", "model"]
    assert [row["keys"] for row in report["rows"]] == [
        ["2026-01-01", "anthropic/claude-test"],
        ["2026-01-01", "openai/gpt-5"],
        ["2026-01-02", "openai/gpt-5"],
    ]
    assert all(row["key"] == " · ".join(row["keys"]) for row in report["rows"])
    assert report["total"] == usage_json("--by", "day")["total"] | {"key": None, "keys": [None]}


def test_one_by_keeps_its_key_and_gains_keys(indexed):
    report = usage_json("--by", "model")
    assert report["by"] == "model"
    assert [(row["key"], row["keys"]) for row in report["rows"]] == [
        ("anthropic/claude-test", ["anthropic/claude-test"]),
        ("openai/gpt-5", ["openai/gpt-5"]),
    ]


def test_the_table_has_a_column_per_key(indexed):
    result = CliRunner().invoke(cli, ["usage", "--by", "day", "--by", "model"])
    head, _rule, *rows = result.stdout.splitlines()
    assert head.split()[:3] == ["day", "model", "entries"]
    assert rows[1].split()[:3] == ["2026-01-01", "openai/gpt-5", "2"]
    assert rows[-1].split()[:2] == ["total", "4"]
