"""What each privacy tier lets reach the server (and the Parquet files), tested as an attacker
would use it: a prompt is planted, pushed at the ``usage`` tier, and from the server's rows
alone (or the export's files alone) the attacker tries to confirm which of four guesses was
the real prompt. The same attack on the local index, which keeps the file digests, succeeds:
the attack is real, and what stops it is what the push sends."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from session_builder import header, message, planted_host, sessions_dir, sync, write_session
from team_server import all_values, psycopg, team_index_as_of

from xcsh_store.cli import cli
from xcsh_store.js import stringify
from xcsh_store.team import connect, export_parquet, push
from xcsh_store.team.disclosure import host_key

GUESSES = (
    "rotate the staging database password before the audit",
    "summarise the quarterly revenue numbers for the board",
    "draft a reply to the customer about yesterday's outage",
    "why does the login test fail only on the ci runners",
)
REAL = GUESSES[2]
SESSION_ID = "7f3c9a12-planted"
CWD = "/home/ana/src/acme-billing"


def victim_records(prompt: str, session_id: str, cwd: str, ids: list[str]) -> list[dict]:
    """The session file a user's agent writes for ``prompt``. The attacker rebuilds it from
    what it knows: the file format, and the ids, cwd and session id the server's rows show."""
    question, answer = ids
    return [
        header(session_id, cwd=cwd),
        message(question, None, "user", prompt),
        message(answer, question, "assistant", "Here is a draft you can send."),
    ]


def plant(agent_dir: Path) -> Path:
    path = sessions_dir(agent_dir) / f"2026-01-05T00-00-00-000Z_{SESSION_ID}.jsonl"
    write_session(path, victim_records(REAL, SESSION_ID, CWD, ["q1", "a1"]))
    sync(agent_dir)
    return path


def fingerprints(data: bytes, prompt: str) -> set[str]:
    """Every digest or size of a candidate file and its prompt an attacker would look for."""
    found = {str(len(data)), str(len(prompt.encode()))}
    for piece in (data, data[:1024], data[-4096:], prompt.encode(), prompt.strip().encode()):
        for name in ("sha1", "sha256", "md5"):
            found.add(hashlib.new(name, piece).hexdigest())
    return found


def tokens(values: Iterable[str]) -> set[str]:
    """The values and each of their parts (a watermark joins a file's facts with ':')."""
    found = set()
    for value in values:
        found.add(value)
        found.update(re.split(r"[\s:,/=\"{}\[\]]+", value))
    return found


def confirmed(seen: set[str], session_id: str, cwd: str, ids: list[str]) -> set[str]:
    """The guesses whose file or prompt leaves a fingerprint among ``seen`` values."""
    hits = set()
    for guess in GUESSES:
        records = victim_records(guess, session_id, cwd, ids)
        data = b"".join(stringify(record) + b"\n" for record in records)
        if fingerprints(data, guess) & seen:
            hits.add(guess)
    return hits


def test_the_attack_confirms_the_prompt_from_digests_of_the_file(agent_dir: Path) -> None:
    """The attack works where digests and sizes are: the local index's own files table."""
    plant(agent_dir)
    connection = sqlite3.connect(f"file:{agent_dir / 'index.db'}?mode=ro", uri=True)
    seen = tokens(str(value) for row in connection.execute("SELECT * FROM files")
                  for value in row)  # fmt: skip
    connection.close()
    assert confirmed(seen, SESSION_ID, CWD, ["q1", "a1"]) == {REAL}


def test_usage_rows_on_the_server_confirm_no_guess(agent_dir: Path, team_url: str) -> None:
    plant(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="usage")
    with psycopg.connect(team_url) as connection:
        session_id, cwd = connection.execute(
            "SELECT session_id, cwd FROM sessions WHERE session_id = %s", (SESSION_ID,)
        ).fetchone()
        ids = [row[0] for row in connection.execute(
            "SELECT id FROM entries WHERE path LIKE %s AND id IS NOT NULL ORDER BY seq",
            (f"%{SESSION_ID}%",))]  # fmt: skip
    seen = tokens(all_values(team_url))
    assert confirmed(seen, session_id, cwd, ids) == set()
    # Not one digest or byte count of the file: the watermark is keyed, the size not sent.
    assert not {value for value in seen if re.fullmatch(r"[0-9a-f]{40}", value)}


def test_the_usage_export_confirms_no_guess(tmp_path: Path, agent_dir: Path) -> None:
    plant(agent_dir)
    out = tmp_path / "out"
    export_parquet(str(agent_dir), str(out), tier="usage", host="laptop")
    values = [path.read_text() for path in out.rglob("*.json")]
    for path in out.rglob("*.parquet"):
        for column in pq.read_table(path).to_pydict().values():
            values += [str(value) for value in column if value is not None]
    assert confirmed(tokens(values), SESSION_ID, CWD, ["q1", "a1"]) == set()


def test_the_keyed_watermark_still_makes_pushes_incremental(agent_dir: Path, team_url: str) -> None:
    path = plant(agent_dir)
    first = push(str(agent_dir), team_url, host="laptop", tier="usage")
    assert push(str(agent_dir), team_url, host="laptop").unchanged == first.files
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(message("q2", "a1", "user", "one more")) + "\n")
    sync(agent_dir)
    assert push(str(agent_dir), team_url, host="laptop").pushed == 1


def test_the_host_key_is_private_and_stays_on_the_machine(agent_dir: Path, team_url: str) -> None:
    plant(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="usage")
    key = agent_dir / "team-key"
    assert key.stat().st_mode & 0o777 == 0o600
    secret = key.read_bytes().strip().decode()
    assert not any(secret in value for value in all_values(team_url))


def _digests_on_server(url: str) -> tuple[int, int]:
    with psycopg.connect(url) as connection:
        return connection.execute(
            "SELECT (SELECT count(*) FROM blob_refs),"
            " (SELECT count(*) FROM entries WHERE prompt_hash IS NOT NULL)"
        ).fetchone()


def test_digests_of_prompts_and_blobs_only_at_the_full_tier(agent_dir: Path, team_url: str) -> None:
    """A prompt's hash or a blob's digest confirms a guess of it as a file's digest would: only
    the full tier, which sends the texts themselves, sends them."""
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="meta")
    assert _digests_on_server(team_url) == (0, 0)
    push(str(agent_dir), team_url, host="laptop", tier="full")
    assert all(count > 0 for count in _digests_on_server(team_url))
    push(str(agent_dir), team_url, host="laptop", tier="meta")
    assert _digests_on_server(team_url) == (0, 0)


# -- --redact-paths ------------------------------------------------------------------------


def _paths_on_server(url: str) -> set[str]:
    return {value for value in all_values(url) if "/home/ana" in value or "acme" in value}


@pytest.mark.parametrize("tier", ["usage", "full"])
def test_redact_paths_sends_labels_instead_of_paths(
    agent_dir: Path, team_url: str, tier: str
) -> None:
    plant(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier=tier)
    assert _paths_on_server(team_url)
    report = push(str(agent_dir), team_url, host="laptop", redact_paths=True)
    assert report.redact_paths and report.pushed == report.files
    leaked = _paths_on_server(team_url)
    if tier == "usage":
        assert leaked == set()
    else:  # the text and JSON of the entries still name them: the docs say so
        assert all(CWD in value for value in leaked)
    with psycopg.connect(team_url) as connection:
        path, cwd, project = connection.execute(
            "SELECT path, cwd, project_dir FROM sessions WHERE session_id = %s", (SESSION_ID,)
        ).fetchone()
        labels = {row[0] for row in connection.execute("SELECT project_dir FROM usage_rollup")}
    assert re.fullmatch(r"project-[0-9a-f]{12}", cwd)
    assert re.fullmatch(r"project-[0-9a-f]{12}", project)
    assert re.fullmatch(
        rf"project-[0-9a-f]{{12}}/2026-01-05T00-00-00-000Z_{SESSION_ID}.jsonl", path
    )
    assert project in labels
    # Remembered, as the tier is: a push without the option keeps the labels.
    assert push(str(agent_dir), team_url, host="laptop").unchanged == report.files
    assert not _paths_on_server(team_url) - leaked


def test_redacted_sessions_are_found_by_host_and_label(agent_dir: Path, team_url: str) -> None:
    plant(agent_dir)
    push(str(agent_dir), team_url, host="laptop", tier="full", redact_paths=True)
    listed = CliRunner().invoke(cli, ["--db", team_url, "ls", "--json"])
    [session] = [item for item in json.loads(listed.output) if item["id"] == SESSION_ID]
    shown = CliRunner().invoke(
        cli, ["--db", team_url, "show", f"laptop:{session['path']}", "--json"]
    )
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["session"]["path"] == session["path"]


def test_redact_paths_in_the_export(tmp_path: Path, agent_dir: Path) -> None:
    plant(agent_dir)
    out = tmp_path / "out"
    export_parquet(str(agent_dir), str(out), tier="usage", host="laptop", redact_paths=True)
    values = [path.read_text() for path in out.rglob("*.json")]
    for path in out.rglob("*.parquet"):
        for column in pq.read_table(path).to_pydict().values():
            values += [str(value) for value in column if value is not None]
    assert not [value for value in values if "/home/ana" in value or str(agent_dir) in value]


def test_migration_2_drops_the_digests_an_older_push_left(agent_dir: Path, team_url: str) -> None:
    """A team index written before keyed watermarks: its SHA-1 watermarks and sizes, and the
    digests below the full tier, are gone once a client migrates it; the next push of each
    host sends its files again."""
    digest = hashlib.sha1(b"head").hexdigest()
    team_index_as_of(team_url, 1)
    with psycopg.connect(team_url, autocommit=True) as connection:
        for host, tier in (("laptop", "usage"), ("ci", "meta"), ("desk", "full")):
            values = {"h": host, "t": tier, "d": digest, "state": f"4242:4242:{digest}"}
            for statement in (
                "INSERT INTO hosts (host, tier) VALUES (%(h)s, %(t)s)",
                "INSERT INTO files VALUES (%(h)s, '/s.jsonl', %(state)s, %(t)s, 4242)",
                "INSERT INTO sessions (host, path, session_id, agent)"
                " VALUES (%(h)s, '/s.jsonl', 's', 'xcsh')",
                "INSERT INTO entries (host, path, seq, prompt_hash)"
                " VALUES (%(h)s, '/s.jsonl', 1, %(d)s)",
                "INSERT INTO blob_refs VALUES (%(h)s, '/s.jsonl', 1, %(d)s)",
            ):
                connection.execute(statement, values)
    connect(team_url).close()
    assert "4242" not in all_values(team_url)
    with psycopg.connect(team_url) as connection:
        assert connection.execute("SELECT DISTINCT state FROM files").fetchall() == [("",)]
        assert connection.execute(
            "SELECT host FROM blob_refs UNION SELECT host FROM entries"
            " WHERE prompt_hash IS NOT NULL"
        ).fetchall() == [("desk",)]
    planted_host(agent_dir)
    report = push(str(agent_dir), team_url, host="laptop")
    assert report.tier == "usage" and report.pushed == report.files


def test_an_unreadable_host_key_is_kept_aside_and_replaced(tmp_path: Path) -> None:
    (tmp_path / "team-key").write_bytes(b"not a key\n")
    key = host_key(str(tmp_path))
    assert len(key) == 32 and host_key(str(tmp_path)) == key
    assert (tmp_path / "team-key.unreadable").read_bytes() == b"not a key\n"
    assert (tmp_path / "team-key").stat().st_mode & 0o777 == 0o600
