"""The team index's failures tell the truth, each provoked for real on the server: a time limit
is a time limit (not a lost connection), the server's full disk is a full disk, and a missing
privilege names the role that has it."""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from session_builder import header, message, planted_host, sessions_dir, sync, write_session
from store_checks import mount_small_disk
from team_server import local_rows, psycopg, server_rows

from xcsh_store.cli import cli
from xcsh_store.team import push


def push_error(agent_dir: Path, url: str, *options: str) -> str:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "push", url, *options])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr.strip()


def test_a_push_stopped_by_statement_timeout_says_it_timed_out(
    agent_dir: Path, team_url: str
) -> None:
    """The role's statement_timeout (here from the URL's options) stops a push waiting for the
    host's lock, which another session holds."""
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="h1")
    limited = f"{team_url}?options=-c%20statement_timeout%3D300"
    with psycopg.connect(team_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(hashtext('xcsh-store push h1'))")
        line = push_error(agent_dir, limited, "--host", "h1")
    assert line.startswith("Error: Timed out pushing at postgresql://postgres@")
    assert "canceling statement due to statement timeout" in line
    assert "the files pushed before it are kept and nothing is half-written" in line
    assert "Lost the connection" not in line


def test_a_role_without_write_privileges_is_told_what_a_pusher_needs(
    agent_dir: Path, team_url: str
) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="h0")
    role = f"xcsh_looker_{os.getpid()}_{secrets.token_hex(3)}"
    url = team_url.replace("postgres@", f"{role}@")
    with psycopg.connect(team_url, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    try:
        # Not taken for a database nobody pushed to: the role may not use the schema.
        assert push_error(agent_dir, url, "--host", "h0") == (
            f"Error: No permission to use the schema of the team index at {url} (a pusher role"
            " needs USAGE on the schema and SELECT, INSERT, UPDATE and DELETE on the team tables)"
        )
        with psycopg.connect(team_url, autocommit=True) as connection:
            connection.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        line = push_error(agent_dir, url, "--host", "h0")
    finally:
        with psycopg.connect(team_url, autocommit=True) as connection:
            connection.execute(f"DROP OWNED BY {role}")
            connection.execute(f"DROP ROLE {role}")
    assert line.startswith("Error: No permission pushing at postgresql://")
    assert "permission denied for table" in line
    assert line.endswith(
        "(a pusher role needs USAGE on the schema and SELECT, INSERT, UPDATE and DELETE on the"
        " team tables)"
    )


@pytest.fixture
def small_tablespace(team_url: str) -> Iterator[str]:
    """A 1 MiB tablespace on a tmpfs of its own, which the server's OS user owns: the server's
    disk, as far as the tables moved into it are concerned. Skipped when the server does not
    run on this machine."""
    with psycopg.connect(team_url, autocommit=True) as connection:
        (data,) = connection.execute("SHOW data_directory").fetchone()
    try:
        owner = os.stat(data)
    except OSError as error:
        pytest.skip(f"the PostgreSQL server's files are not on this machine: {error}")
    name = f"xcsh_small_{os.getpid()}_{secrets.token_hex(3)}"
    # Where the server's user can reach it (pytest's folders are 0700), owned by that user.
    disk = mount_small_disk(Path("/tmp") / name, 1024, (owner.st_uid, owner.st_gid))
    if disk is None:
        pytest.skip("this machine does not let the tests mount a tmpfs")
    try:
        with psycopg.connect(team_url, autocommit=True) as connection:
            connection.execute(f"CREATE TABLESPACE {name} LOCATION '{disk.path}'")
        try:
            yield name
        finally:
            with psycopg.connect(team_url, autocommit=True) as connection:
                connection.execute("ALTER TABLE entries SET TABLESPACE pg_default")
                connection.execute(f"DROP TABLESPACE {name}")
    finally:
        disk.unmount()
        disk.path.rmdir()


def big_sessions(agent_dir: Path, count: int) -> None:
    """Sessions of incompressible text, about 300 KB each."""
    folder = sessions_dir(agent_dir)
    for number in range(count):
        records = [header(f"big-{number}")]
        for turn in range(10):
            text = base64.b64encode(os.urandom(22_000)).decode()
            parent = f"m{turn - 1}" if turn else None
            records.append(message(f"m{turn}", parent, "user", text))
        write_session(folder / f"2026-02-{number + 1:02d}T00-00-00-000Z_big{number}.jsonl", records)
    sync(agent_dir)


def test_the_servers_full_disk_is_said_and_nothing_is_half_written(
    agent_dir: Path, team_url: str, small_tablespace: str
) -> None:
    planted_host(agent_dir)
    push(str(agent_dir), team_url, host="laptop")
    pushed = server_rows(team_url, "laptop")
    with psycopg.connect(team_url, autocommit=True) as connection:
        connection.execute(f"ALTER TABLE entries SET TABLESPACE {small_tablespace}")
    big_sessions(agent_dir, 12)
    line = push_error(agent_dir, team_url, "--host", "laptop")
    assert line.startswith("Error: The team server's disk is full (pushing at postgresql://")
    assert "No space left on device" in line
    assert line.endswith(
        "the files pushed before it are kept and nothing is half-written: push again to send"
        " the rest once its admin frees space"
    )
    # Each file as it was or as it is now: the ones before are all there, none half.
    now = local_rows(agent_dir)
    on_server = server_rows(team_url, "laptop")
    assert pushed["sessions"] <= on_server["sessions"] <= now["sessions"]
    written = {row[0] for row in on_server["sessions"]}
    assert {row for row in on_server["entries"] if row[0] in written} == {
        row for row in now["entries"] if row[0] in written
    }
    with psycopg.connect(team_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE entries SET TABLESPACE pg_default")  # space again
    push(str(agent_dir), team_url, host="laptop")
    assert server_rows(team_url, "laptop") == local_rows(agent_dir)


def test_push_watch_retries_a_round_that_timed_out(agent_dir: Path, team_url: str) -> None:
    """A round stopped by a time limit (lock_timeout: the host's lock held elsewhere) is
    reported and tried again: watching goes on."""
    planted_host(agent_dir)
    limited = f"{team_url}?options=-c%20lock_timeout%3D300"
    with psycopg.connect(team_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(hashtext('xcsh-store push watched'))")
        watcher = subprocess.Popen(
            [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "push", limited,
             "--host", "watched", "--watch", "1s"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert watcher.stderr is not None and watcher.stdout is not None
            # The error's lines (wrapped at $COLUMNS, which the readline module pytest loads puts
            # into the environment of subprocesses), up to the first line of the next round.
            lines = [watcher.stderr.readline()]
            while (more := watcher.stderr.readline()).startswith("  "):
                lines.append(more)
            line = " ".join(part.strip() for part in lines)
            assert line.startswith("Error: Timed out pushing at"), line
            assert "canceling statement due to lock timeout" in line
            holder.execute("SELECT pg_advisory_unlock_all()")
            assert watcher.stdout.readline().startswith("Pushed ")
        finally:
            watcher.terminate()
            watcher.wait(timeout=60)
    assert server_rows(team_url, "watched") == local_rows(agent_dir)
