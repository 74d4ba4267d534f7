"""The team index's proofs, with real processes on the real server: three hosts pushing at
once, one of them SIGKILLed at random points again and again, end with the server equal to
the union of the three local indexes; a connection cut from the server side in the middle of a
file leaves every file as it was or as it is now, and the next push completes it."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from session_builder import append, message, random_tree_session, sync
from team_server import local_rows, psycopg, server_rows

DEADLINE = 120  # seconds: generous, the machine may be loaded; nothing asserts a duration


def host_dir(root: Path, seed: int, sessions: int = 25) -> Path:
    folder = root / "sessions" / f"--host-{seed}--"
    folder.mkdir(parents=True)
    for number in range(sessions):
        random_tree_session(
            folder / f"2026-01-{number % 28 + 1:02d}T00-00-00-000Z_h{seed}n{number}.jsonl",
            seed * 1000 + number,
            150,
        )
    sync(root)
    return root


def start_push(agent_dir: Path, url: str, host: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "push", url,
         "--host", host],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def finish(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    _out, err = process.communicate(timeout=DEADLINE)
    return process.returncode, err.decode()


def test_concurrent_hosts_one_killed_again_and_again_end_equal(
    tmp_path: Path, team_url: str
) -> None:
    hosts = {
        f"host{seed}": host_dir(tmp_path / f"agent{seed}", seed, 60 if seed == 0 else 25)
        for seed in range(3)
    }
    steady = [
        start_push(folder, team_url, host) for host, folder in hosts.items() if host != "host0"
    ]
    chaos = random.Random(17)
    kills = 0
    for attempt in range(6):
        # Killed a random moment after start, or after the server shows the next of its
        # transactions committed (a few files each), at a random point of the one after.
        victim = start_push(hosts["host0"], team_url, "host0")
        if attempt == 0:
            time.sleep(chaos.uniform(0.05, 0.4))
        else:
            target = _files_of(team_url, "host0") + 1
            deadline = time.monotonic() + DEADLINE
            while victim.poll() is None and _files_of(team_url, "host0") < target:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            time.sleep(chaos.uniform(0, 0.05))
        if victim.poll() is None:
            victim.send_signal(signal.SIGKILL)
            kills += 1
        victim.wait(timeout=DEADLINE)
    assert kills >= 3
    assert [finish(process)[0] for process in steady] == [0, 0]
    assert finish(start_push(hosts["host0"], team_url, "host0"))[0] == 0
    for host, folder in hosts.items():
        assert server_rows(team_url, host) == local_rows(folder), host


def _files_of(url: str, host: str) -> int:
    """How many files of ``host`` the server holds (0 before the first push made the schema)."""
    with psycopg.connect(url, autocommit=True) as connection:
        if connection.execute("SELECT to_regclass('files')").fetchone() == (None,):
            return 0
        row = connection.execute("SELECT count(*) FROM files WHERE host = %s", (host,))
        return row.fetchone()[0]


def _blocked_push(url: str) -> int | None:
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'xcsh-store'"
            " AND wait_event_type = 'Lock'"
        ).fetchone()
    return row[0] if row else None


def test_a_connection_cut_mid_file_leaves_nothing_half_written(
    agent_dir: Path, team_url: str
) -> None:
    host_dir(agent_dir, 7, sessions=30)
    assert finish(start_push(agent_dir, team_url, "cut"))[0] == 0
    old = local_rows(agent_dir)
    paths = sorted(path for path, *_ in old["sessions"])
    for path in paths:
        append(Path(path), message(f"new-{Path(path).stem}", None, "user", "appended"))
    sync(agent_dir)
    new = local_rows(agent_dir)
    middle = paths[len(paths) // 2]
    # Hold the middle file's watermark row: the push blocks inside the transaction that
    # replaces it (after the files before it were committed, in earlier transactions).
    holder = psycopg.connect(team_url)
    holder.execute("SELECT 1 FROM files WHERE host = 'cut' AND path = %s FOR UPDATE", (middle,))
    process = start_push(agent_dir, team_url, "cut")
    deadline = time.monotonic() + DEADLINE
    while (pid := _blocked_push(team_url)) is None:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    with psycopg.connect(team_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    holder.rollback()
    holder.close()
    code, error = finish(process)
    assert code == 1
    assert error.strip().count("\n") == 0
    assert error.startswith("Error: Lost the connection to")

    server = server_rows(team_url, "cut")
    for path in paths:
        on_server = {
            table: {row for row in rows if row[0] == path} for table, rows in server.items()
        }
        versions = [
            {table: {row for row in rows if row[0] == path} for table, rows in state.items()}
            for state in (old, new)
        ]
        assert on_server in versions, path
    assert {row for row in server["sessions"] if row[0] == middle} <= old["sessions"]
    assert {row for row in server["sessions"] if row[0] == paths[0]} <= new["sessions"]

    assert finish(start_push(agent_dir, team_url, "cut"))[0] == 0
    assert server_rows(team_url, "cut") == new


def test_push_watch_syncs_and_pushes_what_arrives(agent_dir: Path, team_url: str) -> None:
    folder = host_dir(agent_dir, 3, sessions=2)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(folder), "push", team_url,
         "--host", "watched", "--watch", "1s", "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        new = folder / "sessions" / "--host-3--" / "2026-02-01T00-00-00-000Z_late.jsonl"
        deadline = time.monotonic() + DEADLINE
        while _files_of(team_url, "watched") < 2:
            assert time.monotonic() < deadline and watcher.poll() is None
            time.sleep(0.1)
        random_tree_session(new, 99, 20)
        while _files_of(team_url, "watched") < 3:
            assert time.monotonic() < deadline and watcher.poll() is None
            time.sleep(0.1)
    finally:
        watcher.terminate()
        watcher.wait(timeout=DEADLINE)
    assert server_rows(team_url, "watched") == local_rows(folder)
