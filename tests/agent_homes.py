"""Where each JSONL agent (Gemini CLI, GitHub Copilot CLI, Qwen Code, Factory Droid, Cursor)
keeps the fixtures of tests/fixtures/<agent>/ below a home, as that agent would have written
them: tests/test_agents_jsonl.py syncs them there, benchmarks/compare_ccusage_jsonl.py runs
ccusage on them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from session_builder import FIXTURES

# agent: {fixture path below FIXTURES: its place below the home}
HOME_PLACES = {
    "gemini": {
        "gemini/jazzyalex__agent-sessions__jsonl_v040.jsonl":
            ".gemini/tmp/0b7dfb12/chats/session-2026-04-29T21-39-gemini_s.jsonl",
    },
    "copilot": {
        "copilot/jazzyalex__agent-sessions__small.jsonl":
            ".copilot/session-state/copilot_stage0_small.jsonl",
        "copilot/juspay__shooter__session.jsonl": ".copilot/session-state/sess-1.jsonl",
        "copilot/jazzyalex__agent-sessions__aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl":
            ".copilot/session-state/aaaabbbb-1111-2222-3333-ccccddddeeee/events.jsonl",
    },
    "qwen": {
        "qwen/Piebald-AI__splitrail__qwen_code.jsonl":
            ".qwen/projects/-tmp-qwentest/chats/69f0814a-8bfc-4c8e-93d3-05757f17b96f.jsonl",
        "qwen/jazzyalex__agent-sessions__019f0000-0000-7000-8000-000000000001.jsonl":
            ".qwen/projects/-tmp-as-qwen-fixture-project/chats/"
            "019f0000-0000-7000-8000-000000000001.jsonl",
    },
    "droid": {
        "droid/jazzyalex__agent-sessions__session_store_small.jsonl":
            ".factory/sessions/-tmp/droid_s1.jsonl",
    },
    "cursor": {
        "cursor/jazzyalex__agent-sessions__small.jsonl":
            ".cursor/projects/tmp-repo/agent-transcripts/small/small.jsonl",
        "cursor/jazzyalex__agent-sessions__subagent/parent.jsonl":
            ".cursor/projects/tmp-repo/agent-transcripts/parent/parent.jsonl",
        "cursor/jazzyalex__agent-sessions__subagent/subagents/child.jsonl":
            ".cursor/projects/tmp-repo/agent-transcripts/parent/subagents/child.jsonl",
    },
}  # fmt: skip


def lay_out_agents(home: Path, agents: tuple[str, ...] = tuple(HOME_PLACES)) -> list[Path]:
    """Copy the fixtures of ``agents`` where each agent keeps them below ``home``."""
    placed = []
    for agent in agents:
        for source, place in HOME_PLACES[agent].items():
            target = home / place
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(FIXTURES / source, target)
            placed.append(target)
    return placed


# The sessions kept as documents or trees of files (Gemini CLI's older chats, opencode's
# storage): {fixture path below FIXTURES (a file or a folder): its place below the home}.
DOCUMENT_PLACES = {
    "gemini": {
        "gemini/wesm__agentsview__tool_calls.json":
            ".gemini/tmp/abc123def456/chats/session-2024-01-01T10-00-sess-uui.json",
        "gemini/wesm__agentsview__thinking_only.json":
            ".gemini/tmp/abc123def456/chats/session-2024-01-01T10-00-sess-thi.json",
    },
    "opencode": {
        "opencode/jazzyalex__agent-sessions__storage_v2": ".local/share/opencode/storage",
    },
}  # fmt: skip


def lay_out_documents(home: Path, agents: tuple[str, ...] = tuple(DOCUMENT_PLACES)) -> list[Path]:
    """Copy the document and tree fixtures of ``agents`` where each agent keeps them."""
    placed = []
    for agent in agents:
        for source, place in DOCUMENT_PLACES[agent].items():
            target = home / place
            target.parent.mkdir(parents=True, exist_ok=True)
            if (FIXTURES / source).is_dir():
                shutil.copytree(FIXTURES / source, target)
            else:
                shutil.copyfile(FIXTURES / source, target)
            placed.append(target)
    return placed


def opencode_database(storage: Path, database: Path) -> None:
    """The storage tree's sessions in opencode 1.x's tables (session.sql.ts), as opencode's
    migration from the tree into SQLite puts them: a row per session, message and part, the
    message's and part's JSON without its ids in ``data``; a WAL database, as opencode's."""
    with closing(sqlite3.connect(database)) as connection, connection:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.executescript(
            "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT,"
            " slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT"
            " NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);"
            "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created"
            " INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);"
            "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT"
            " NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT"
            " NOT NULL);"
        )
        for path in sorted((storage / "session").glob("*/*.json")):
            info = json.loads(path.read_bytes())
            times = info["time"]
            connection.execute(
                "INSERT INTO session VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (info["id"], info["projectID"], info.get("parentID"), info.get("slug", ""),
                 info["directory"], info["title"], info["version"], times["created"],
                 times["updated"]),
            )  # fmt: skip
            for message_path in sorted((storage / "message" / info["id"]).glob("*.json")):
                message = json.loads(message_path.read_bytes())
                created = message["time"]["created"]
                data = {k: v for k, v in message.items() if k not in ("id", "sessionID")}
                connection.execute(
                    "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                    (message["id"], info["id"], created, created, json.dumps(data)),
                )
                for part_path in sorted((storage / "part" / message["id"]).glob("*.json")):
                    part = json.loads(part_path.read_bytes())
                    data = {
                        k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")
                    }
                    connection.execute(
                        "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                        (part["id"], message["id"], info["id"], created, created,
                         json.dumps(data)),
                    )  # fmt: skip


# Gemini CLI's JSONL fixture as the older releases would have kept the chat: one document.
PRICED_DOCUMENT = ".gemini/tmp/0b7dfb12/chats/session-2026-04-29T21-39-gemini_d.json"


def lay_out_priced_gemini_document(home: Path) -> Path:
    """The JSONL chat of ``HOME_PLACES["gemini"]`` (whose ``gemini`` messages carry tokens) as
    a document chat (``{<metadata>, messages: [...]}``, its records in order, ``$set`` ones
    left out, after a ``<session_context>`` that names its cwd) of a session and message ids
    of its own, so that it is a session beside it."""
    (source,) = HOME_PLACES["gemini"]
    lines = [json.loads(line) for line in (FIXTURES / source).read_bytes().splitlines()]
    # (Opened by the context that names the cwd, as Gemini CLI's chats are.)
    context = "<session_context>\n**Workspace Directories:**\n  - /tmp/gemini-document\n"
    document = {
        **lines[0], "sessionId": lines[0]["sessionId"] + "-document",
        "messages": [{"id": "context-document", "type": "user", "content": [{"text": context}]}],
    }  # fmt: skip
    for record in lines[1:]:
        if "type" in record:
            document["messages"].append({**record, "id": record["id"] + "-document"})
    target = home / PRICED_DOCUMENT
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document))
    return target
