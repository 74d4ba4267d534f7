"""The session forms the readers missed (issue 35 item 5), each reproduced by a small
hand-written file of the shape found in public repositories' files (the shape only: the words
are ours), laid out where its agent keeps it in the test's home and synced:

* Amp: a thread wrapped as ``{"thread": {...}}`` with plain-string ``content``; a cwd given
  only as a percent-encoded ``file://`` URI (``env.initial.trees[].uri``).
* opencode: the flat ``storage/part/`` folder (each part names its ``messageID``), a user's
  words kept only in ``summary.body``; a folder of ``opencode export`` documents.
* Qwen Code: a ``custom_title`` system record.
* Gemini CLI: the notices Gemini CLI records as ``user`` messages (a plan-mode switch, the
  editor's context) are no prompts.
* GitHub Copilot CLI: a session with answers and no prompt.
* Codex: ``cache_write_input_tokens`` (GPT-5.6), the token_count that repeats the running total
  with no new usage (after a compaction, codex-rs ``recompute_token_usage``), the date folders
  that are no projects.
* Claude Code: a line written twice with the same uuid counts once.
* Start times a file does not give are unknown, never 1970-01-01; ``--json`` says null where a
  value is absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from xcsh_store.agents.prices.pricing import Request, price_table
from xcsh_store.cli.app import cli
from xcsh_store.index import SessionIndex
from xcsh_store.index.model.paths import entry_rows, read_entries


def _home() -> Path:
    return Path(os.environ["HOME"])


def _write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(value))
    return path


def _write_lines(path: Path, values: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(value) + b"\n" for value in values))
    return path


def _session(index: SessionIndex, path: Path) -> dict[str, Any]:
    names = [row[1] for row in index.connection.execute("PRAGMA table_info(sessions)")]
    rows = list(index.connection.execute("SELECT * FROM sessions WHERE path = ?", (str(path),)))
    assert len(rows) == 1, f"{path} is indexed as {len(rows)} sessions"
    return dict(zip(names, rows[0], strict=True))


def _texts(index: SessionIndex, path: Path, role: str) -> list[str]:
    """The text of every message entry of ``role``, in file order."""
    row = _session(index, path)
    rows = entry_rows(index.connection, row["file_id"])
    found = []
    for entry in read_entries(str(path), rows, None, row["agent"]):
        message = entry.get("message") or {}
        if message.get("role") == role:
            texts = [block["text"] for block in message["content"] if block["type"] == "text"]
            found.append("\n".join(texts))
    return found


def _ls_json(*args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["ls", "--json", "-n", "0", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


# -- Amp ------------------------------------------------------------------------------------


def _amp_thread(name: str, thread: dict[str, Any]) -> Path:
    return _write(Path(os.environ["AMP_DATA_DIR"]) / "threads" / name, thread)


WRAPPED_THREAD = {
    "thread": {
        "v": 12,
        "id": "T-0198aaaa-0000-7000-8000-000000000001",
        "created": 1754000000000,
        "title": "Tidy the parser",
        "messages": [
            {"role": "user", "messageId": 0, "content": "tidy the parser please"},
            {"role": "assistant", "messageId": 1, "content": "Done: the parser is tidy."},
        ],
        "env": {
            "initial": {
                "trees": [
                    {"displayName": "my project", "uri": "file:///home/ana/my%20project%C3%A9"}
                ]
            }
        },
    }
}


def test_an_amp_thread_wrapped_in_thread_reads_its_messages_and_title(index: SessionIndex):
    path = _amp_thread("T-0198aaaa-0000-7000-8000-000000000001.json", WRAPPED_THREAD)
    index.sync(workers=1)
    row = _session(index, path)
    assert (row["session_id"], row["title"], row["message_count"]) == (
        "T-0198aaaa-0000-7000-8000-000000000001",
        "Tidy the parser",
        2,
    )
    assert _texts(index, path, "user") == ["tidy the parser please"]
    assert _texts(index, path, "assistant") == ["Done: the parser is tidy."]


def test_an_amp_cwd_given_as_a_file_uri_is_its_decoded_path(index: SessionIndex):
    path = _amp_thread("T-0198aaaa-0000-7000-8000-000000000001.json", WRAPPED_THREAD)
    index.sync(workers=1)
    assert _session(index, path)["cwd"] == "/home/ana/my projecté"


def test_an_amp_thread_without_created_starts_at_its_first_message(index: SessionIndex):
    thread = {
        "id": "T-untimed",
        "messages": [
            {"role": "user", "text": "hello", "createdAt": "2026-05-08T08:00:00.000Z"},
            {"role": "assistant", "text": "hi", "createdAt": "2026-05-08T08:05:00.000Z"},
        ],
    }
    path = _amp_thread("T-untimed.json", thread)
    index.sync(workers=1)
    assert _session(index, path)["created_at"] == "2026-05-08T08:00:00.000Z"


# -- opencode -------------------------------------------------------------------------------


def _opencode_storage() -> Path:
    return Path(os.environ["OPENCODE_DATA_DIR"]) / "storage"


def _flat_part_session() -> Path:
    """A session whose parts lie flat in ``storage/part/`` (each names its message), and
    whose first user message keeps its words only in ``summary.body``."""
    storage = _opencode_storage()
    session = _write(
        storage / "session" / "global" / "ses_flat.json",
        {"id": "ses_flat", "version": "0.3.112", "projectID": "global", "directory": "/srv/app",
         "title": "Flat parts", "time": {"created": 1752000000000, "updated": 1752000090000}},
    )  # fmt: skip
    messages = storage / "message" / "ses_flat"
    _write(
        messages / "msg_a1.json",
        {"id": "msg_a1", "sessionID": "ses_flat", "role": "user",
         "time": {"created": 1752000001000},
         "summary": {"title": "Port 8080 in use", "body": "Found nginx holding port 8080.",
                     "diffs": []}},
    )  # fmt: skip
    _write(
        messages / "msg_a2.json",
        {"id": "msg_a2", "sessionID": "ses_flat", "role": "assistant",
         "time": {"created": 1752000002000}, "modelID": "claude-sonnet-4", "providerID":
         "anthropic", "cost": 0.01, "tokens": {"input": 10, "output": 5, "reasoning": 0,
         "cache": {"read": 0, "write": 0}}},
    )  # fmt: skip
    _write(
        storage / "part" / "prt_b1.json",
        {"id": "prt_b1", "messageID": "msg_a2", "sessionID": "ses_flat", "type": "text",
         "text": "nginx holds port 8080"},
    )  # fmt: skip
    _write(
        storage / "part" / "prt_b2.json",
        {"id": "prt_b2", "messageID": "msg_a2", "sessionID": "ses_flat", "type": "tool",
         "callID": "call_1", "tool": "bash", "state": {"status": "completed",
         "input": {"command": "ss -ltnp"}, "output": "LISTEN 0 511 *:8080"}},
    )  # fmt: skip
    return session


def test_opencode_parts_in_the_flat_part_folder_are_found_by_their_message(
    index: SessionIndex,
):
    path = _flat_part_session()
    index.sync(workers=1)
    assert _texts(index, path, "assistant") == ["nginx holds port 8080"]
    assert _texts(index, path, "toolResult") == ["LISTEN 0 511 *:8080"]


def test_an_opencode_user_message_known_by_its_summary_alone_is_a_searchable_notice(
    index: SessionIndex,
):
    # summary.title and .body are what opencode wrote of the turn afterwards (session/
    # summary.ts asks a small model to summarise it), not the user's words: searchable, shown,
    # and no prompt.
    path = _flat_part_session()
    index.sync(workers=1)
    assert _texts(index, path, "user") == []
    assert _session(index, path)["first_message"] is None
    (hit,) = index.search("nginx holding")
    assert (hit.path, hit.type, "Port 8080 in use" in hit.snippet) == (
        str(path), "custom_message", True,
    )  # fmt: skip


# An `opencode export <session id>` document: the session's info, each message's info with
# its parts (the objects of the storage tree, ids included).
EXPORT = {
    "info": {
        "id": "ses_export1", "slug": "quiet-river", "projectID": "global", "directory":
        "/home/ana/cap", "title": "Shared session", "version": "1.15.6", "cost": 0.02,
        "time": {"created": 1784254006744, "updated": 1784260401799},
    },
    "messages": [
        {
            "info": {"id": "msg_e1", "sessionID": "ses_export1", "role": "user",
                     "time": {"created": 1784254006803}, "summary": {"diffs": []}},
            "parts": [{"type": "text", "text": "add a tile palette", "id": "prt_e1",
                       "sessionID": "ses_export1", "messageID": "msg_e1"}],
        },
        {
            "info": {"id": "msg_e2", "sessionID": "ses_export1", "parentID": "msg_e1",
                     "role": "assistant", "modelID": "glm-5.2", "providerID": "zhipuai",
                     "cost": 0.02, "tokens": {"input": 1000, "output": 200, "reasoning": 50,
                     "cache": {"read": 300, "write": 0}},
                     "time": {"created": 1784254006854, "completed": 1784254041522}},
            "parts": [
                {"type": "step-start", "id": "prt_e2", "messageID": "msg_e2"},
                {"type": "text", "text": "The palette is in Palette.gd.", "id": "prt_e3",
                 "messageID": "msg_e2"},
                {"type": "tool", "tool": "bash", "callID": "call_e1", "id": "prt_e4",
                 "messageID": "msg_e2", "state": {"status": "completed", "input":
                 {"command": "ls scripts"}, "output": "Palette.gd"}},
            ],
        },
    ],
}  # fmt: skip


def test_a_folder_of_opencode_export_documents_reads_each_as_a_session(
    tmp_path: Path, index: SessionIndex
):
    shared = tmp_path / "shared"
    path = _write(shared / "opencode-session.json", EXPORT)
    index.add_root(str(shared), "opencode")
    index.sync(workers=1)
    row = _session(index, path)
    assert (row["session_id"], row["title"], row["cwd"], row["message_count"]) == (
        "ses_export1", "Shared session", "/home/ana/cap", 3,
    )  # fmt: skip
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"]) == (
        1000, 250, 300,
    )  # fmt: skip
    assert _texts(index, path, "user") == ["add a tile palette"]
    assert _texts(index, path, "toolResult") == ["Palette.gd"]


def test_a_json_file_that_is_no_opencode_export_is_reported_with_the_reason(
    tmp_path: Path, index: SessionIndex
):
    shared = tmp_path / "shared"
    _write(shared / "opencode-session.json", EXPORT)
    other = _write(shared / "notes.json", {"todo": ["read the logs"]})
    index.add_root(str(shared), "opencode")
    report = index.sync(workers=1)
    assert "not an opencode export" in report.unreadable[str(other)]


# -- Qwen Code, Gemini CLI, GitHub Copilot CLI ---------------------------------------------


def _qwen_line(uuid: str, parent: str | None, kind: str, **fields: Any) -> dict[str, Any]:
    return {"uuid": uuid, "parentUuid": parent, "sessionId": "qwen-titled",
            "timestamp": "2026-06-15T14:40:22.832Z", "type": kind, "cwd": "/tmp/q",
            "version": "0.21.0", **fields}  # fmt: skip


def test_a_qwen_custom_title_titles_its_session(index: SessionIndex):
    path = _write_lines(
        Path(os.environ["QWEN_HOME"]) / "projects" / "-tmp-q" / "chats" / "qwen-titled.jsonl",
        [
            _qwen_line("u1", None, "user", message={"role": "user", "parts": [{"text": "hi"}]}),
            _qwen_line("a1", "u1", "assistant", model="qwen3-coder",
                       message={"role": "model", "parts": [{"text": "hello"}]}),
            _qwen_line("t1", "a1", "system", subtype="custom_title",
                       systemPayload={"customTitle": "Greeting", "titleSource": "manual"}),
        ],
    )  # fmt: skip
    index.sync(workers=1)
    row = _session(index, path)
    assert (row["title"], row["title_source"]) == ("Greeting", "user")


def test_a_gemini_cli_notice_sent_as_a_user_message_is_no_prompt(index: SessionIndex):
    chat = _home() / ".gemini" / "tmp" / "proj" / "chats" / "session-2026-01-02T10-00-gem1.jsonl"
    notice = (
        "User has manually exited Plan Mode. Switching to Default mode (edits will require"
        " confirmation)."
    )
    path = _write_lines(
        chat,
        [
            {"sessionId": "gem1", "projectHash": "abc", "startTime": "2026-01-02T10:00:00Z",
             "lastUpdated": "2026-01-02T10:05:00Z", "kind": "main"},
            {"id": "m1", "timestamp": "2026-01-02T10:01:00Z", "type": "user",
             "content": [{"text": notice}]},
            {"id": "m2", "timestamp": "2026-01-02T10:02:00Z", "type": "user",
             "content": [{"text": "actually fix the parser"}]},
        ],
    )  # fmt: skip
    index.sync(workers=1)
    assert _session(index, path)["first_message"] == "actually fix the parser"


def _copilot_answer_only() -> Path:
    return _write_lines(
        Path(os.environ["COPILOT_HOME"]) / "session-state" / "cop-1" / "events.jsonl",
        [
            {"type": "session.start", "id": "e1", "parentId": None,
             "timestamp": "2026-03-26T17:50:34.302Z",
             "data": {"sessionId": "cop-1", "version": 1, "context": {"cwd": "/tmp/p"}}},
            {"type": "assistant.message", "id": "e2", "parentId": "e1",
             "timestamp": "2026-03-26T17:50:36.000Z",
             "data": {"content": "Resuming where we left off.", "model": "gpt-5-mini"}},
        ],
    )  # fmt: skip


def test_a_copilot_session_with_answers_and_no_prompt_says_no_prompt(index: SessionIndex):
    _copilot_answer_only()
    index.sync(workers=1)
    result = CliRunner().invoke(cli, ["--color", "never", "ls", "--agent", "copilot"])
    assert result.exit_code == 0, result.output
    assert "(no prompt)" in result.output and "(no messages)" not in result.output


def test_json_says_null_where_a_session_has_no_prompt(index: SessionIndex):
    _copilot_answer_only()
    index.sync(workers=1)
    (listed,) = _ls_json("--agent", "copilot")
    assert listed["first_message"] is None


# -- Codex ----------------------------------------------------------------------------------


def _rollout(lines: list[dict[str, Any]], day: str = "2026/08/01") -> Path:
    folder = Path(os.environ["CODEX_HOME"]) / "sessions" / day
    meta = {"timestamp": "2026-08-01T05:17:40.000Z", "type": "session_meta",
            "payload": {"id": "019a0000-aaaa-7000-8000-000000000001",
                        "timestamp": "2026-08-01T05:17:40.000Z", "cwd": "/home/ana/cap",
                        "originator": "codex_cli_rs", "cli_version": "0.150.0"}}  # fmt: skip
    context = {"timestamp": "2026-08-01T05:17:42.000Z", "type": "turn_context",
               "payload": {"cwd": "/home/ana/cap", "model": "gpt-5.6"}}  # fmt: skip
    name = "rollout-2026-08-01T05-17-40-019a0000-aaaa-7000-8000-000000000001.jsonl"
    return _write_lines(folder / name, [meta, context, *lines])


def _usage(input_tokens: int, cached: int, written: int, output: int, total: int) -> dict:
    return {"input_tokens": input_tokens, "cached_input_tokens": cached,
            "cache_write_input_tokens": written, "output_tokens": output,
            "reasoning_output_tokens": 0, "total_tokens": total}  # fmt: skip


def _token_count(timestamp: str, total: dict, last: dict) -> dict[str, Any]:
    return {"timestamp": timestamp, "type": "event_msg",
            "payload": {"type": "token_count", "rate_limits": None,
                        "info": {"total_token_usage": total, "last_token_usage": last,
                                 "model_context_window": 258400}}}  # fmt: skip


def _usage_row(index: SessionIndex, path: Path) -> tuple[Any, ...]:
    row = _session(index, path)
    figures = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    return (*(row[name] for name in figures), round(row["cost"], 9))


def test_codex_cache_writes_are_read_and_priced_at_the_cache_write_rate(index: SessionIndex):
    call = _usage(51_600, 36_000, 15_000, 300, 51_900)
    path = _rollout([_token_count("2026-08-01T05:17:49.919Z", call, call)])
    index.sync(workers=1)
    cost = price_table().cost(
        Request("gpt-5.6", "2026-08-01T05:17:49.919Z", 600, 300, 36_000, 15_000,
                provider="openai")
    )  # fmt: skip
    assert cost is not None
    assert _usage_row(index, path) == (600, 300, 36_000, 15_000, round(cost, 9))


def test_a_codex_report_with_no_new_usage_adds_and_removes_nothing(index: SessionIndex):
    first = _usage(10_000, 8_000, 0, 500, 10_500)
    # After a compaction Codex reports again with the running total unchanged and a
    # last_token_usage of nothing but its estimate of the context (recompute_token_usage).
    estimate = _usage(0, 0, 0, 0, 3_200)
    path = _rollout(
        [
            _token_count("2026-08-01T05:18:00.000Z", first, first),
            {"timestamp": "2026-08-01T05:18:30.000Z", "type": "compacted",
             "payload": {"message": "Summary of the work so far."}},
            _token_count("2026-08-01T05:18:31.000Z", first, estimate),
        ]
    )  # fmt: skip
    index.sync(workers=1)
    assert _usage_row(index, path)[:4] == (2_000, 500, 8_000, 0)


def test_a_codex_date_folder_is_no_project(index: SessionIndex):
    _rollout([])
    index.sync(workers=1)
    (listed,) = _ls_json("--agent", "codex")
    assert (listed["project_dir"], listed["project"]) == (None, "/home/ana/cap")


# -- Claude Code ----------------------------------------------------------------------------


def _claude_line(uuid: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
    return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "c-dup",
            "timestamp": "2026-04-01T10:00:00.000Z", "cwd": "/tmp/c", "version": "2.1.0",
            "message": {"role": role, "content": [{"type": "text", "text": text}]}}  # fmt: skip


def _claude_file() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-tmp-c" / "c-dup.jsonl"


def test_a_claude_line_written_twice_counts_once(index: SessionIndex):
    answer = _claude_line("a1", "u1", "assistant", "hello")
    path = _write_lines(_claude_file(), [_claude_line("u1", None, "user", "hi"), answer, answer])
    index.sync(workers=1)
    row = _session(index, path)
    assert (row["entry_count"], row["message_count"]) == (2, 2)


def test_a_claude_line_written_again_after_a_sync_counts_once(index: SessionIndex):
    answer = _claude_line("a1", "u1", "assistant", "hello")
    path = _write_lines(_claude_file(), [_claude_line("u1", None, "user", "hi"), answer])
    index.sync(workers=1)
    with path.open("ab") as stream:
        stream.write(orjson.dumps(answer) + b"\n")
    index.sync(workers=1)
    row = _session(index, path)
    assert (row["entry_count"], row["message_count"]) == (2, 2)


# -- Start times ----------------------------------------------------------------------------


def test_an_unknown_start_time_is_null_never_1970(index: SessionIndex):
    _write_lines(
        _home() / ".cursor" / "projects" / "repo" / "agent-transcripts" / "t1" / "t1.jsonl",
        [
            {"role": "user", "message": {"content": [{"type": "text", "text": "list"}]}},
            {"role": "assistant", "message": {"content": [{"type": "text", "text": "ok"}]}},
        ],
    )
    index.sync(workers=1)
    (listed,) = _ls_json("--agent", "cursor")
    assert listed["created"] is None
    shown = CliRunner().invoke(cli, ["--color", "never", "show", "t1"])
    assert shown.exit_code == 0, shown.output
    assert "1970" not in shown.output
