"""Claude Code and Codex sessions in the index (issue 18): full sync throughput of a generated
Claude corpus and a generated Codex corpus against the floor of parsing and inserting the same
rows, as bench_index_sync does for xcsh files; then search and ``ls --agent`` on a mixed index
(the xcsh corpus with both agents' corpora as extra roots).

    python -m benchmarks.bench_agents [--size 500MB] [--sessions 1000] [--mixed-xcsh DIR]

* corpora: deterministic (seeded) files shaped like the agents' own: Claude Code transcripts
  (user prompts, responses streamed as several assistant lines sharing message.id with text,
  thinking and tool_use blocks, tool results, progress and file-history-snapshot lines) and
  Codex rollouts (session_meta, turn_context, user_message events, response items: messages,
  reasoning summaries, function calls and outputs, token_count events), written once under
  $XCSH_BENCH_DATA/agents-* (default benchmarks/.data) and reused;
* full sync, 1 worker and the default: ``SessionIndex.sync`` from an empty index;
* the floor: orjson-parse every line, then insert exactly the rows the sync produced
  (bench_index_sync.floor): the work a sync in one process cannot avoid;
* mixed: the same search with and without ``agents=["claude"]``, and ``list_sessions`` of 50
  with and without ``agents=["codex"]`` (ratios against the unfiltered call in the same run).

Targets (as for xcsh files, issue 16): at least 50 MB/s with the default workers on 2 cores,
peak RSS of the sync's processes at most 300 MB; a filter costs at most 2x the unfiltered call.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_index_sync import _sync_rows, build_chunks, floor
from benchmarks.corpus import DATA_DIR, parse_size
from benchmarks.harness import compare, measure_in_child, print_table, time_call
from benchmarks.index_common import WORK_DIR, fresh_db_path
from benchmarks.index_common import agent_corpus as xcsh_corpus
from xcsh_store.index import SessionIndex

DATA = Path(os.environ.get("XCSH_BENCH_DATA", DATA_DIR))
WORDS = (Path(__file__).parent / "words.txt").read_text().split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(WORDS, k=words))


def _stamp(second: int) -> str:
    day, rest = divmod(second, 86_400)
    hour, rest = divmod(rest, 3600)
    month, date = 1 + day // 28 % 12, 1 + day % 28
    return f"2026-{month:02d}-{date:02d}T{hour:02d}:{rest // 60:02d}:{rest % 60:02d}.000Z"


def claude_session(
    rng: random.Random,
    session_id: str,
    target: int,
    start: int,
    text: Callable[[random.Random, int], str] = _text,
) -> bytes:
    """A Claude Code transcript of about ``target`` bytes; ``text(rng, words)`` writes its
    prose (uniform words of ``words.txt`` unless given)."""
    lines: list[bytes] = []
    size = 0
    parent = None
    second = start
    turn = 0
    common = {
        "sessionId": session_id,
        "cwd": "/work/project",
        "version": "2.1.90",
        "userType": "external",
        "isSidechain": False,
        "gitBranch": "main",
    }

    def add(value: dict[str, Any]) -> None:
        nonlocal size, parent
        line = orjson.dumps(value) + b"\n"
        lines.append(line)
        size += len(line)
        if "uuid" in value:
            parent = value["uuid"]

    while size < target:
        turn += 1
        second += rng.randint(5, 120)
        add(
            {
                **common,
                "type": "user",
                "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                "parentUuid": parent,
                "timestamp": _stamp(second),
                "message": {"role": "user", "content": text(rng, rng.randint(8, 60))},
            }
        )
        add(
            {
                "type": "file-history-snapshot",
                "messageId": parent,
                "isSnapshotUpdate": False,
                "snapshot": {"trackedFileBackups": {}, "timestamp": _stamp(second)},
            }
        )
        for _ in range(rng.randint(1, 4)):
            message_id = f"msg_{rng.getrandbits(64):016x}"
            request_id = f"req_{rng.getrandbits(64):016x}"
            blocks = [
                {
                    "type": "thinking",
                    "thinking": text(rng, rng.randint(20, 120)),
                    "signature": "x" * 200,
                },
                {"type": "text", "text": text(rng, rng.randint(10, 80))},
                {
                    "type": "tool_use",
                    "id": f"toolu_{rng.getrandbits(48):012x}",
                    "name": rng.choice(["Bash", "Read", "Edit"]),
                    "input": {"command": text(rng, 6), "description": text(rng, 5)},
                },
            ]
            usage = {
                "input_tokens": rng.randint(1, 50),
                "cache_read_input_tokens": rng.randint(1000, 90000),
                "cache_creation_input_tokens": rng.randint(0, 5000),
            }
            for part, block in enumerate(blocks):
                second += 1
                add(
                    {
                        **common,
                        "type": "assistant",
                        "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                        "parentUuid": parent,
                        "timestamp": _stamp(second),
                        "requestId": request_id,
                        "message": {
                            "id": message_id,
                            "type": "message",
                            "role": "assistant",
                            "model": "claude-sonnet-4-5-20250929",
                            "content": [block],
                            "stop_reason": "tool_use" if part == 2 else None,
                            "usage": {**usage, "output_tokens": 40 * (part + 1)},
                        },
                    }
                )
            tool_use_id = blocks[2]["id"]
            add(
                {
                    "type": "progress",
                    "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                    "parentUuid": parent,
                    "sessionId": session_id,
                    "timestamp": _stamp(second),
                    "data": {"type": "hook_progress", "hookName": "PreToolUse"},
                }
            )
            add(
                {
                    **common,
                    "type": "user",
                    "uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                    "parentUuid": parent,
                    "timestamp": _stamp(second),
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": tool_use_id,
                                "content": text(rng, rng.randint(30, 600)),
                            }
                        ],
                    },
                    "toolUseResult": {"stdout": "", "stderr": "", "interrupted": False},
                }
            )
        if turn % 10 == 0:
            add({"type": "ai-title", "aiTitle": text(rng, 5), "sessionId": session_id})
    return b"".join(lines)


def codex_session(rng: random.Random, session_id: str, target: int, start: int) -> bytes:
    lines: list[bytes] = []
    size = 0
    second = start
    total = 0

    def add(kind: str, payload: dict[str, Any]) -> None:
        nonlocal size
        line = orjson.dumps({"timestamp": _stamp(second), "type": kind, "payload": payload}) + b"\n"
        lines.append(line)
        size += len(line)

    add(
        "session_meta",
        {
            "id": session_id,
            "timestamp": _stamp(second),
            "cwd": "/work/project",
            "originator": "codex_cli_rs",
            "cli_version": "0.98.0",
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": _text(rng, 400)},
        },
    )
    while size < target:
        second += rng.randint(5, 120)
        add(
            "turn_context",
            {"cwd": "/work/project", "model": "gpt-5.1-codex", "approval_policy": "on-request"},
        )
        prompt = _text(rng, rng.randint(8, 60))
        add(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}],
            },
        )
        add("event_msg", {"type": "user_message", "message": prompt, "images": []})
        for _ in range(rng.randint(1, 5)):
            second += 2
            add(
                "response_item",
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": _text(rng, 30)}],
                    "encrypted_content": "g" * 600,
                },
            )
            call = f"call_{rng.getrandbits(48):012x}"
            arguments = orjson.dumps({"command": ["bash", "-lc", _text(rng, 8)]}).decode()
            add(
                "response_item",
                {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call},
            )
            output = orjson.dumps(
                {"output": _text(rng, rng.randint(30, 600)), "metadata": {"exit_code": 0}}
            ).decode()
            add(
                "response_item", {"type": "function_call_output", "call_id": call, "output": output}
            )
            last = {
                "input_tokens": rng.randint(5000, 90000),
                "cached_input_tokens": 4000,
                "output_tokens": rng.randint(50, 900),
                "reasoning_output_tokens": 64,
                "total_tokens": 0,
            }
            total += last["input_tokens"] + last["output_tokens"]
            info = {
                "total_token_usage": {"total_tokens": total},
                "last_token_usage": last,
                "model_context_window": 272000,
            }
            add("event_msg", {"type": "token_count", "info": info, "rate_limits": None})
        add(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": _text(rng, 60)}],
            },
        )
        add("event_msg", {"type": "agent_message", "message": _text(rng, 60)})
    return b"".join(lines)


def agent_corpus(agent: str, size: int, sessions: int) -> tuple[str, int]:
    """(the agent dir, bytes) of a generated corpus: its files under ``<dir>/sessions``."""
    target = DATA / f"agents-{agent}-{size // 1_000_000}mb-{sessions}"
    done = target / "DONE"
    if done.is_file():
        return str(target), int(done.read_text())
    rng = random.Random(f"{agent}:{size}:{sessions}")
    written = 0
    for number in range(sessions):
        session_id = str(uuid.UUID(int=rng.getrandbits(128)))
        if agent == "claude":
            folder = target / "sessions" / f"-work-project-{number % 20}"
            content = claude_session(rng, session_id, size // sessions, number * 3600)
        else:
            folder = target / "sessions" / "2026" / "01" / f"{1 + number % 28:02d}"
            content = codex_session(rng, session_id, size // sessions, number * 3600)
        folder.mkdir(parents=True, exist_ok=True)
        name = (
            f"{session_id}.jsonl"
            if agent == "claude"
            else f"rollout-{number:05d}-{session_id}.jsonl"
        )
        (folder / name).write_bytes(content)
        written += len(content)
    done.write_text(str(written))
    return str(target), written


def throughput(
    agent: str,
    size: int,
    sessions: int,
    corpus: Callable[[str, int, int], tuple[str, int]] = agent_corpus,
) -> list[Any]:
    """Full sync of ``corpus``'s files of ``agent`` with 1 and the default workers, and the
    floor of parsing and inserting the same rows."""
    agent_dir, total = corpus(agent, size, sessions)
    megabytes = total / 1e6
    label = f"{agent}: full sync of {megabytes:,.0f} MB ({sessions} sessions)"
    runs: list[tuple[int | None, str]] = [
        (1, "1 worker (none started)"),
        (None, "the default workers"),
    ]
    rows, rates = _sync_rows(label, agent_dir, megabytes, runs, f"agents-{agent}", target=50)
    chunks_file = str(WORK_DIR / "agents-chunks" / f"{agent}.marshal")
    Path(chunks_file).parent.mkdir(parents=True, exist_ok=True)
    build_chunks(agent_dir, chunks_file)
    floor_run = measure_in_child(
        floor, agent_dir, chunks_file, fresh_db_path(f"agents-floor-{agent}")
    )
    os.remove(chunks_file)
    floor_rate = megabytes / (floor_run.result / 1e6)
    rows += [
        compare(
            f"{agent}: floor, parse + insert the same rows, one process",
            floor_rate,
            rates[1],
            unit="MB/s",
            higher_is_better=True,
        ),
        compare(
            f"{agent}: default-workers sync against the floor",
            rates[None],
            floor_rate,
            unit="MB/s",
            higher_is_better=True,
        ),
    ]
    return rows


def mixed(xcsh_dir: str, claude_dir: str, codex_dir: str) -> list[Any]:
    db_path = fresh_db_path("agents-mixed")
    with SessionIndex.open(xcsh_dir, db_path=db_path) as index:
        index.add_root(os.path.join(claude_dir, "sessions"), "claude")
        index.add_root(os.path.join(codex_dir, "sessions"), "codex")
        index.sync()
        counts = dict(
            index.connection.execute(
                "SELECT agent, count(*) FROM sessions GROUP BY agent"
            ).fetchall()
        )
        word = WORDS[len(WORDS) // 3]
        shown = ", ".join(f"{count:,} {agent}" for agent, count in sorted(counts.items()))
        searched = time_call(lambda: index.search(word, limit=20), label="search")
        claude = time_call(lambda: index.search(word, limit=20, agents=["claude"]), label="claude")
        listed = time_call(lambda: index.list_sessions(limit=50), label="ls")
        codex = time_call(lambda: index.list_sessions(limit=50, agents=["codex"]), label="codex")
        rows = [
            compare(f"search {word!r} in {shown} sessions", searched),
            compare("search, --agent claude", claude, searched, limit=2 * searched.median),
            compare("ls -n 50, every agent", listed),
            compare("ls -n 50 --agent codex", codex, listed, limit=2 * listed.median),
        ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="500MB", help="size of each agent's corpus")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument(
        "--mixed-xcsh",
        help="the xcsh agent dir of the mixed index (only read; default: generated once)",
    )
    options = parser.parse_args()
    options.mixed_xcsh = options.mixed_xcsh or xcsh_corpus("200MB", 10_000).agent_dir
    size = parse_size(options.size)
    rows = throughput("claude", size, options.sessions) + throughput(
        "codex", size, options.sessions
    )
    claude_dir, _ = agent_corpus("claude", size, options.sessions)
    codex_dir, _ = agent_corpus("codex", size, options.sessions)
    rows += mixed(options.mixed_xcsh, claude_dir, codex_dir)
    print_table(
        rows, title="Claude Code and Codex sessions (baselines: 1 worker; the floor; unfiltered)"
    )


if __name__ == "__main__":
    main()
