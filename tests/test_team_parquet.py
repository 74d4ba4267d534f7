"""``export parquet``: read back with DuckDB, the export equals the index; it is incremental
(only the partitions of changed sessions are written again) and keeps to its tier."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from session_builder import PLANTED, append, message, planted_host, sessions_dir, sync

from xcsh_store.cli import cli
from xcsh_store.team import export_parquet

duckdb = pytest.importorskip("duckdb", reason="the export is read back with DuckDB")


def read(folder: Path, table: str, select: str, then: str = "") -> set[tuple[Any, ...]]:
    files = f"{folder}/{table}/**/*.parquet"
    sql = f"SELECT {select} FROM read_parquet('{files}', hive_partitioning = true) {then}"
    return set(duckdb.sql(sql).fetchall())


def local(agent_dir: Path, sql: str) -> set[tuple[Any, ...]]:
    connection = sqlite3.connect(f"file:{agent_dir / 'index.db'}?mode=ro", uri=True)
    try:
        return set(connection.execute(sql))
    finally:
        connection.close()


def test_the_export_read_by_duckdb_equals_the_index(tmp_path: Path, agent_dir: Path) -> None:
    planted_host(agent_dir)
    out = tmp_path / "out"
    export_parquet(str(agent_dir), str(out), host="laptop")
    assert read(out, "sessions", "host, month, path, session_id, entry_count, cost") == {
        ("laptop", (created or "")[:7] or "unknown", path, session_id, count, cost)
        for path, session_id, count, cost, created in local(
            agent_dir, "SELECT path, session_id, entry_count, cost, created_at FROM sessions"
        )
    }
    assert read(out, "entries", "path, seq, id, type, input_tokens, cost") == local(
        agent_dir,
        "SELECT s.path, e.seq, e.id, e.type, e.input_tokens, e.cost FROM entries AS e"
        " JOIN sessions AS s ON s.file_id = e.session",
    )
    assert read(out, "usage", "id, timestamp, model, input_tokens, cost") == local(
        agent_dir, "SELECT id, timestamp, model, input_tokens, cost FROM usage_entries"
    )


def test_usage_by_month_from_duckdb_equals_the_usage_verb(tmp_path: Path, agent_dir: Path) -> None:
    planted_host(agent_dir)
    export_parquet(str(agent_dir), str(tmp_path / "out"), host="laptop")
    result = CliRunner().invoke(cli, ["usage", "--by", "day", "--json"])
    days = {
        (row["key"], row["entries"], row["total_tokens"])
        for row in json.loads(result.output)["rows"]
    }
    assert (
        read(
            tmp_path / "out",
            "usage",
            "substr(timestamp, 1, 10), count(*), sum(input_tokens + output_tokens"
            " + cache_read_tokens + cache_write_tokens)",
            "GROUP BY 1",
        )
        == days
    )


def _files(folder: Path) -> dict[str, int]:
    return {str(path.relative_to(folder)): path.stat().st_ino for path in folder.rglob("*.parquet")}


def test_an_export_writes_only_the_partitions_that_changed(tmp_path: Path, agent_dir: Path) -> None:
    planted_host(agent_dir)
    out = tmp_path / "out"
    first = export_parquet(str(agent_dir), str(out), host="laptop")
    before = _files(out)
    assert first.partitions == len(before) > 3
    again = export_parquet(str(agent_dir), str(out), host="laptop")
    assert (again.changed, again.partitions) == (0, 0)
    append(
        sessions_dir(agent_dir) / "2026-01-03T00-00-00-000Z_planted.jsonl",
        message("p9", "p2", "user", "one more"),
    )
    sync(agent_dir)
    after_append = export_parquet(str(agent_dir), str(out), host="laptop")
    assert (after_append.changed, after_append.partitions) == (1, 3)
    now = _files(out)
    replaced = {name for name in before if now[name] != before[name]}
    assert replaced == {f"{table}/host=laptop/month=2026-01/data.parquet"
                        for table in ("sessions", "entries", "usage")}  # fmt: skip
    assert ("planted", "p9") in read(out, "entries", "session_id, id")


def test_deleted_sessions_leave_the_export(tmp_path: Path, agent_dir: Path) -> None:
    planted_host(agent_dir)
    out = tmp_path / "out"
    export_parquet(str(agent_dir), str(out), host="laptop")
    for path in sessions_dir(agent_dir).glob("*.jsonl"):
        path.unlink()
    sync(agent_dir)
    export_parquet(str(agent_dir), str(out), host="laptop")
    assert read(out, "sessions", "path") == local(agent_dir, "SELECT path FROM sessions")
    for path in (agent_dir / "sessions").rglob("*.jsonl"):
        path.unlink()
    sync(agent_dir)
    report = export_parquet(str(agent_dir), str(out), host="laptop")
    assert report.partitions > 0
    assert not list(out.rglob("*.parquet"))


def test_the_usage_tier_exports_no_text(tmp_path: Path, agent_dir: Path) -> None:
    planted_host(agent_dir)
    out = tmp_path / "out"
    export_parquet(str(agent_dir), str(out), tier="usage", host="laptop")
    for path in out.rglob("*.parquet"):
        text = duckdb.sql(f"SELECT * FROM read_parquet('{path}')").fetchall()
        assert not any(word in str(row).lower() for row in text for word in PLANTED), path
    full = tmp_path / "full"
    export_parquet(str(agent_dir), str(full), host="laptop")
    assert (f"answer {PLANTED[2]}",) in read(full, "entries", "text")


def test_export_verb_json(tmp_path: Path, agent_dir: Path) -> None:
    planted_host(agent_dir)
    result = CliRunner().invoke(cli, ["export", "parquet", str(tmp_path / "o"), "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["sessions"] == body["changed"] > 0


def test_hosts_share_one_export_folder(tmp_path: Path, agent_dir: Path) -> None:
    planted_host(agent_dir)
    other = planted_host(tmp_path / "ci", range(4, 6))
    out = tmp_path / "out"
    for _round in range(2):
        reports = [
            export_parquet(str(agent_dir), str(out), host="laptop"),
            export_parquet(str(other), str(out), host="ci"),
        ]
    assert [report.partitions for report in reports] == [0, 0]
    assert read(out, "sessions", "host, count(*)", "GROUP BY host") == {
        ("laptop", len(local(agent_dir, "SELECT path FROM sessions"))),
        ("ci", len(local(other, "SELECT path FROM sessions"))),
    }
