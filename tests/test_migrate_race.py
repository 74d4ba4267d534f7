"""``migrate`` rewriting a file while another process appends to it loses no line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from session_builder import PROJECT

from xcsh_store.cli import cli

# Appends id-less (legacy) messages through the store's own writer, one open file for the whole
# run as an agent keeps it, until the stop file appears (or 20,000 lines); prints how many.
# Each line leaves the file in need of migration (compatibility: Entries without id or parentId),
# so a migrate run then rewrites it.
APPENDER = """
import json, os, sys, time
from xcsh_store.format.storage import FileSessionStorage
path, stop = sys.argv[1:]
out = FileSessionStorage().open_writer(path, "a")
count = 0
while count < 3 or not os.path.exists(stop) and count < 20_000:
    line = {"type": "message", "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": f"late {count}"}]}}
    out.write_line(json.dumps(line).encode() + b"\\n")
    count += 1
    if count == 3:
        print("ready", flush=True)
    time.sleep(0.005)  # an agent's pace, not a flood: leaves migrate room to rewrite
out.close()
print(count, flush=True)
"""

MIGRATIONS_WHILE_APPENDING = 15


def _legacy_session(path: Path, messages: int) -> None:
    """A v1 file: no version, no entry ids."""
    path.parent.mkdir(parents=True)
    lines = [{"type": "session", "id": "racing", "timestamp": "2026-01-01T00:00:00.000Z",
              "cwd": "/race"}]  # fmt: skip
    lines += [
        {"type": "message", "timestamp": "2026-01-01T00:00:00.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": f"early {n}"}]}}
        for n in range(messages)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _texts(path: Path) -> list[str]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r["message"]["content"][0]["text"] for r in records if r["type"] == "message"]


def test_lines_appended_during_migrate_are_all_kept(tmp_path):
    agent = tmp_path / "agent"
    path = agent / "sessions" / PROJECT / "2026-01-01_racing.jsonl"
    _legacy_session(path, 2000)
    stop = tmp_path / "stop"
    appender = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), str(stop)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert appender.stdout is not None
        assert appender.stdout.readline() == "ready\n"
        # The appender runs for all of these: it stops only when told to, after them. The
        # first rewrites the v1 file; the others whatever id-less lines came since, if any.
        statuses = []
        for _run in range(MIGRATIONS_WHILE_APPENDING):
            result = CliRunner().invoke(cli, ["--agent-dir", str(agent), "migrate", "--json"])
            assert result.exit_code == 0, result.output
            statuses.append(json.loads(result.stdout)["files"][0]["status"])
        assert statuses[0] == "migrated" and set(statuses) <= {"migrated", "current"}
    finally:
        stop.touch()
        written = int(appender.communicate(timeout=120)[0])
    texts = _texts(path)
    assert texts[:2000] == [f"early {n}" for n in range(2000)]
    assert sorted(texts[2000:], key=lambda text: int(text.split()[1])) == [
        f"late {n}" for n in range(written)
    ]
