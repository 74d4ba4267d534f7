"""``xcsh-store statusline`` (issue 37): Claude Code's statusLine JSON on stdin through a real
pipe, one line out, always exit 0; its sums equal `usage`'s (each session's cost, a day's);
its five-hour window is `usage --by block`'s active one; colour only in a terminal, never with
NO_COLOR; and it imports neither click nor the index's store."""

from __future__ import annotations

import errno
import io
import json
import os
import pty
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from xcsh_store.cli.statusline import main
from xcsh_store.glance.status import active_window
from xcsh_store.glance.usage import of_session, open_read_only, since
from xcsh_store.index import SessionIndex
from xcsh_store.paths import get_index_db_path
from xcsh_store.times import iso_millis

PROGRAM = str(Path(sys.executable).with_name("xcsh-store"))


def statusline(
    agent_dir: Path, given: bytes, *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The installed program as Claude Code runs it: JSON through a pipe, stdout a pipe."""
    return subprocess.run(
        [PROGRAM, "statusline", "--agent-dir", str(agent_dir), *arguments],
        input=given,
        capture_output=True,
        timeout=60,
        env=os.environ | (env or {}),
    )


def cli_json(agent_dir: Path, *arguments: str) -> dict:
    result = subprocess.run(
        [PROGRAM, "--agent-dir", str(agent_dir), "--no-sync", *arguments, "--json"],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)


@pytest.fixture
def synced_home(agent_dir, real_home):
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return real_home


def claude_sessions(agent_dir: Path) -> list[tuple[str, str]]:
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        rows = index.connection.execute(
            "SELECT DISTINCT session_id, files.path FROM sessions JOIN files ON files.id = file_id"
            " WHERE sessions.agent = 'claude' AND session_id IS NOT NULL ORDER BY session_id"
        ).fetchall()
    return [(session, path) for session, path in rows]


def test_each_sessions_cost_is_usage_by_sessions(agent_dir, synced_home):
    rows = {row["key"]: row for row in cli_json(agent_dir, "usage", "--by", "session")["rows"]}
    connection = open_read_only(get_index_db_path(str(agent_dir)))
    assert connection is not None
    with connection:
        checked = 0
        for key, row in rows.items():
            cost = of_session(connection, key)
            # Unknown (no request priced) is None in both, never $0.
            assert cost == (None if row["cost"] is None else pytest.approx(row["cost"])), key
            checked += 1
    assert checked >= 10


def test_a_days_cost_is_usage_since_that_day(agent_dir, synced_home):
    connection = open_read_only(get_index_db_path(str(agent_dir)))
    assert connection is not None
    with connection:
        days = sorted(
            {
                row[0][:10]
                for row in connection.execute(
                    "SELECT timestamp FROM entries WHERE input_tokens IS NOT NULL"
                    " AND timestamp IS NOT NULL"
                )
            }
        )
        for day in days[:: max(1, len(days) // 6)]:
            midnight = datetime.fromisoformat(day).astimezone()
            total = cli_json(agent_dir, "usage", "--since", day)["total"]
            cost, tokens = since(connection, iso_millis(midnight))
            expected = None if total["cost"] is None else pytest.approx(total["cost"], abs=1e-9)
            assert cost == expected, day
            four = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
            assert tokens == sum(total[name] for name in four), day


def test_the_five_hour_window_is_usage_by_blocks_active_one(agent_dir, synced_home):
    blocks = cli_json(agent_dir, "usage", "--by", "block", "--agent", "claude")["blocks"]
    worked = [block for block in blocks if not block["gap"]]
    connection = open_read_only(get_index_db_path(str(agent_dir)))
    assert connection is not None and len(worked) >= 3
    with connection:
        for block in worked:
            last = datetime.fromisoformat(block["last_request"].replace("Z", "+00:00"))
            window = active_window(connection, last + timedelta(minutes=1))
            assert window is not None
            assert iso_millis(window.start) == iso_millis(
                datetime.fromisoformat(block["start"].replace("Z", "+00:00"))
            )
            four = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
            assert window.tokens == sum(block[name] for name in four)
            assert window.cost == pytest.approx(block["cost"] or 0.0, abs=1e-9)
        # Five hours after a window's last request it is over.
        assert active_window(connection, last + timedelta(hours=5, seconds=1)) is None


def test_a_real_pipe_prints_one_line_with_the_sessions_cost(agent_dir, synced_home):
    rows = {row["key"]: row for row in cli_json(agent_dir, "usage", "--by", "session")["rows"]}
    session, path = next(
        (session, path) for session, path in claude_sessions(agent_dir) if rows.get(session)
    )
    given = {
        "session_id": session,
        "transcript_path": path,
        "cwd": "/somewhere",
        "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
        "workspace": {"current_dir": "/somewhere", "project_dir": "/somewhere"},
        "cost": {"total_cost_usd": 123.0},
        "rate_limits": {"five_hour": {"used_percentage": 23.5, "resets_at": 1738425600}},
    }
    result = statusline(agent_dir, json.dumps(given).encode())
    assert result.returncode == 0 and result.stderr == b""
    line = result.stdout.decode()
    assert line.endswith("\n") and line.count("\n") == 1
    cost = rows[session]["cost"]
    assert line.startswith(f"Opus · session ${cost:,.2f} · today $")
    assert "limit 5h 24%" in line and "\x1b" not in line  # a pipe: no colour


@pytest.mark.parametrize(
    "given",
    [b"", b"not json", b"[1, 2]", b"\xff\xfe",
     b'{"session_id": 5, "model": "x", "cost": {"total_cost_usd": "a"}}',
     b'{"model": {"display_name": "two\\nlines\\u001b[31m"}}'],
)  # fmt: skip
def test_bad_input_prints_what_it_can_and_exits_0(agent_dir, synced_home, given):
    result = statusline(agent_dir, given)
    assert result.returncode == 0
    line = result.stdout.decode()
    assert line.count("\n") == 1 and "\x1b" not in line and "today $" in line
    assert b"Traceback" not in result.stderr


def test_no_index_still_prints_and_says_why(tmp_path):
    result = statusline(tmp_path / "none", b'{"cost": {"total_cost_usd": 0.5}}')
    assert result.returncode == 0
    assert result.stdout == b"session $0.50 (Claude's)\n"
    assert b"no index" in result.stderr


def in_a_terminal(agent_dir: Path, given: bytes, env: dict[str, str]) -> str:
    """What the line shows in a terminal (stdout a pty; stdin still Claude Code's pipe)."""
    leader, follower = pty.openpty()
    environment = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    with subprocess.Popen(
        [PROGRAM, "statusline", "--agent-dir", str(agent_dir)],
        stdin=subprocess.PIPE,
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=environment | {"TERM": "xterm-256color"} | env,
    ) as child:
        os.close(follower)
        assert child.stdin is not None
        child.stdin.write(given)
        child.stdin.close()
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError as error:
                if error.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert child.wait() == 0
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_in_a_terminal_and_never_with_no_color(agent_dir, synced_home):
    given = json.dumps({"rate_limits": {"five_hour": {"used_percentage": 97}}}).encode()
    assert "\x1b[31;1m5h 97%\x1b[0m" in in_a_terminal(agent_dir, given, {})
    assert "\x1b" not in in_a_terminal(agent_dir, given, {"NO_COLOR": "1"})
    forced = statusline(agent_dir, given, "--color", "always")
    assert b"\x1b[31;1m5h 97%" in forced.stdout


def test_budgets_of_the_day_show_with_a_warning(agent_dir, synced_home):
    connection = open_read_only(get_index_db_path(str(agent_dir)))
    assert connection is not None
    with connection:
        day = connection.execute(
            "SELECT max(timestamp) FROM entries WHERE input_tokens IS NOT NULL AND cost > 0"
        ).fetchone()[0]
    now = datetime.fromisoformat(day.replace("Z", "+00:00")) + timedelta(seconds=1)
    with open_read_only(get_index_db_path(str(agent_dir))) as connection:
        spent = since(
            connection,
            iso_millis(now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0)),
        )[0]
    assert spent > 0
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[budget]\ndaily = {spent / 0.96!r}\n")
    out, err = io.StringIO(), io.StringIO()
    assert (
        main(["--agent-dir", str(agent_dir), "--color", "always"], io.StringIO("{}"), out, err, now)
        == 0
    )
    assert "\x1b[31;1mday budget 96%\x1b[0m" in out.getvalue(), (out.getvalue(), err.getvalue())


def test_it_imports_neither_click_nor_the_index_store(agent_dir, synced_home):
    script = (
        "import sys, io\n"
        f"sys.argv = ['xcsh-store', 'statusline', '--agent-dir', {str(agent_dir)!r}]\n"
        'sys.stdin = io.TextIOWrapper(io.BytesIO(b\'{"session_id": "x"}\'))\n'
        "from xcsh_store.cli.launch import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "import json\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(result.stderr.splitlines()[-1]))
    assert "xcsh_store.glance.status" in loaded  # it ran
    unwanted = {"click", "xcsh_store.cli.app", "xcsh_store.index", "xcsh_store.index.store",
                "xcsh_store.agents", "starlette", "mcp", "psycopg"}  # fmt: skip
    assert sorted(unwanted & loaded) == []


def test_through_the_click_group_too(agent_dir, synced_home):
    # Global options before the verb, and --help, go through click to the same line.
    given = json.dumps({"rate_limits": {"seven_day": {"used_percentage": 85}}}).encode()
    result = subprocess.run(
        [PROGRAM, "--color", "always", "--agent-dir", str(agent_dir), "statusline"],
        input=given,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout.count(b"\n") == 1 and b"\x1b[33m7d 85%\x1b[0m" in result.stdout
    helped = subprocess.run([PROGRAM, "statusline", "--help"], capture_output=True, timeout=60)
    assert helped.returncode == 0 and b"statusLine" in helped.stdout
