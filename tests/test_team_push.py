"""``push``: the team index on the real PostgreSQL server equals the local index per host,
pushes are incremental and idempotent, rewrites, truncations and deletions propagate, and the
privacy tiers hold."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from session_builder import (
    PLANTED,
    append,
    message,
    planted_host,
    random_tree_session,
    sessions_dir,
    sync,
)
from team_server import local_rows, psycopg, server_rows, text_values

from xcsh_store.cli import cli
from xcsh_store.team import TeamIndexError, push, schema_version


def test_push_copies_the_local_index_exactly(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    local = local_rows(agent_dir)
    assert report.pushed == len(local["sessions"]) > 5
    assert server_rows(team_url, "laptop") == local
    assert local["blob_refs"]


def test_a_second_push_changes_nothing(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    with psycopg.connect(team_url) as connection:
        before = connection.execute("SELECT path, pushed_at FROM files ORDER BY path").fetchall()
    again = push(str(agent_dir), team_url, host="laptop")
    with psycopg.connect(team_url) as connection:
        after = connection.execute("SELECT path, pushed_at FROM files ORDER BY path").fetchall()
    assert (again.pushed, again.deleted, again.entries) == (0, 0, 0)
    assert again.unchanged == len(before)
    assert after == before


def test_appends_rewrites_truncations_and_deletions_propagate(
    agent_dir: Path, team_url: str
) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    folder = sessions_dir(agent_dir)
    append(folder / "2026-01-02T00-00-00-000Z_r0.jsonl", message("zz01", None, "user", "more"))
    random_tree_session(folder / "2026-01-02T00-00-01-000Z_r1.jsonl", 77, 30)  # rewritten
    truncated = folder / "2026-01-02T00-00-02-000Z_r2.jsonl"
    lines = truncated.read_bytes().splitlines(keepends=True)
    truncated.write_bytes(b"".join(lines[: len(lines) // 2]))
    (folder / "2026-01-03T00-00-00-000Z_planted.jsonl").unlink()
    sync(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert (report.pushed, report.deleted) == (3, 1)
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)


def test_hosts_write_only_their_own_rows(tmp_path: Path, agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    other = planted_host(tmp_path / "other", range(5, 7))
    push(str(agent_dir), team_url, host="laptop")
    push(str(other), team_url, host="ci")
    for path in (agent_dir / "sessions").rglob("*.jsonl"):
        path.unlink()
    sync(agent_dir)
    assert push(str(agent_dir), team_url, host="laptop").deleted > 5
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)
    assert server_rows(team_url, "ci") == local_rows(other)
    assert server_rows(team_url, "ci")["entries"]


def _planted_words_on_server(url: str) -> set[tuple[str, str]]:
    return {
        (table, column)
        for table, column, value in text_values(url)
        if any(word in value.lower() for word in PLANTED)
    }


def test_the_usage_tier_leaves_no_text_in_any_column(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="usage")
    # Every row but the blob digests (full tier only: test_team_tiers.py).
    assert server_rows(team_url, "laptop") == local_rows(agent_dir) | {"blob_refs": set()}
    assert _planted_words_on_server(team_url) == set()


def test_the_meta_tier_adds_titles_and_first_prompts_only(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="meta")
    assert _planted_words_on_server(team_url) == {
        ("sessions", "title"),
        ("sessions", "first_message"),
    }


def test_the_full_tier_carries_text_and_raw_json(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    with psycopg.connect(team_url) as connection:
        raw, text = connection.execute(
            "SELECT raw, text FROM entries WHERE id = 'p2' AND host = 'laptop'"
        ).fetchone()
    assert json.loads(raw)["message"]["content"][0]["text"] == f"answer {PLANTED[2]}"
    assert PLANTED[2] in text


def test_lowering_the_tier_deletes_what_it_no_longer_allows(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    report = push(str(agent_dir), team_url, host="laptop", tier="usage")
    assert (report.lowered_from, report.pushed) == ("full", 0)
    assert _planted_words_on_server(team_url) == set()
    # Without --tier a push keeps the host's tier: it never raises what the host shares.
    assert push(str(agent_dir), team_url, host="laptop").tier == "usage"
    assert _planted_words_on_server(team_url) == set()


def test_raising_the_tier_pushes_every_file_again(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="usage")
    report = push(str(agent_dir), team_url, host="laptop", tier="full")
    assert report.pushed == report.files
    assert ("entries", "text") in _planted_words_on_server(team_url)


def test_the_host_is_remembered(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="named-once")
    assert push(str(agent_dir), team_url).host == "named-once"


def test_push_verb_json(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    result = CliRunner().invoke(cli, ["push", team_url, "--host", "h1", "--tier", "meta", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert (body["host"], body["tier"], body["pushed"]) == ("h1", "meta", body["files"])


# -- bad input: one line, nothing half-written ---------------------------------------------


def _push_error(agent_dir: Path, url: str) -> str:
    result = CliRunner().invoke(cli, ["push", url, "--host", "h1"])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def test_an_unreachable_server_is_one_line(agent_dir: Path) -> None:
    planted_host(agent_dir)
    line = _push_error(agent_dir, "postgresql://postgres@127.0.0.1:1/nothing")
    assert line.startswith("Error: Cannot connect to postgresql://postgres@127.0.0.1:1/nothing")


def test_wrong_credentials_are_one_line(
    agent_dir: Path, team_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted_host(agent_dir)
    monkeypatch.setenv("PGPASSWORD", "secret")
    line = _push_error(agent_dir, team_url.replace("postgres@", "nobody_here@"))
    assert line.startswith("Error: Cannot connect to postgresql://nobody_here@127.0.0.1")
    assert 'role "nobody_here" does not exist' in line and "secret" not in line


@pytest.fixture
def reader_role(agent_dir: Path, team_url: str) -> Iterator[str]:
    """The URL of a role that may read the team tables (created by a first push) and write
    none of them."""
    role = f"xcsh_reader_{os.getpid()}"
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="h0")
    with psycopg.connect(team_url, autocommit=True) as connection:
        connection.execute(f"DROP ROLE IF EXISTS {role}")
        connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        connection.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    yield team_url.replace("postgres@", f"{role}@")
    with psycopg.connect(team_url, autocommit=True) as connection:
        connection.execute(f"DROP OWNED BY {role}")
        connection.execute(f"DROP ROLE {role}")


def test_a_read_only_role_is_one_line_and_writes_nothing(
    agent_dir: Path, team_url: str, reader_role: str
) -> None:
    line = _push_error(agent_dir, reader_role)
    assert line.startswith("Error: No permission pushing")
    assert not any(server_rows(team_url, "h1").values())


def test_a_newer_server_schema_is_refused(agent_dir: Path, team_url: str) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="h0")
    with psycopg.connect(team_url) as connection:
        connection.execute("INSERT INTO xcsh_schema (version, name) VALUES (999, 'future')")
    line = _push_error(agent_dir, team_url)
    assert f"has schema version 999, newer than this xcsh-store knows ({schema_version()})" in line
    with pytest.raises(TeamIndexError, match="upgrade xcsh-store"):
        push(str(agent_dir), team_url, host="h0")


def test_a_push_without_an_index_says_so(agent_dir: Path, team_url: str) -> None:
    line = _push_error(agent_dir, team_url)
    assert line.startswith("Error: No index at") and "xcsh-store sync" in line
    assert not agent_dir.exists()


def test_the_cli_offers_the_tiers_push_knows() -> None:
    from xcsh_store.cli.verbs import team as team_verbs
    from xcsh_store.team import TIERS

    assert team_verbs._TIERS == TIERS


def test_a_watch_ends_on_an_error_retrying_cannot_mend(agent_dir: Path) -> None:
    planted_host(agent_dir)
    result = CliRunner().invoke(cli, ["push", "mysql://elsewhere/db", "--watch", "1h"])
    assert result.exit_code == 1
    assert result.output.strip() == "Error: Not a PostgreSQL URL: mysql://… (postgresql://…)"
