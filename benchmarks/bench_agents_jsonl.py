"""Gemini CLI, GitHub Copilot CLI, Qwen Code, Factory Droid and Cursor sessions in the index
(issue 29): full sync throughput of a generated corpus of each agent's JSONL files against the
floor of parsing and inserting the same rows, as bench_agents does for Claude Code and Codex.

    python -m benchmarks.bench_agents_jsonl [--size 100MB] [--sessions 200] [--agents gemini,...]

* corpora: deterministic (seeded) files shaped like each agent's own (agents/<name>.py says
  what each holds): Gemini chats (metadata, user and gemini records with thoughts, tool calls
  and tokens, functionResponse results, a record written again, ``$set`` titles, a rewind now
  and then), Copilot events (session.start, user and assistant messages with tool requests,
  tool executions, a shutdown with totals), Qwen lines (user, model parts with thoughts and
  function calls, usageMetadata, tool results, ui_telemetry), Droid messages (Anthropic
  blocks) and Cursor transcripts (role lines, turn_ended); written once under
  $XCSH_BENCH_DATA/agents-<name>-* (default benchmarks/.data) and reused;
* full sync with 1 worker and the default, and the floor (bench_agents.throughput).

Target, as for every format (issue 16): at least 50 MB/s with the default workers on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_agents import DATA, _stamp, _text, throughput
from benchmarks.corpus import parse_size
from benchmarks.harness import print_table

Lines = list[dict[str, Any]]


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


def gemini_session(rng: random.Random, session_id: str, second: int) -> Lines:
    lines: Lines = [
        {
            "sessionId": session_id,
            "projectHash": "ab" * 32,
            "startTime": _stamp(second),
            "lastUpdated": _stamp(second),
            "kind": "main",
        }
    ]
    for turn in range(rng.randint(5, 15)):
        second += rng.randint(5, 120)
        user = f"u{turn}-{rng.getrandbits(32):08x}"
        lines.append(
            {
                "id": user,
                "timestamp": _stamp(second),
                "type": "user",
                "content": [{"text": _text(rng, rng.randint(8, 60))}],
            }
        )
        answer = f"g{turn}-{rng.getrandbits(32):08x}"
        call = {
            "id": f"c{turn}",
            "name": "run_shell_command",
            "args": {"command": _text(rng, 6)},
            "status": "success",
            "timestamp": _stamp(second),
            "result": [
                {
                    "functionResponse": {
                        "id": f"c{turn}",
                        "name": "run_shell_command",
                        "response": {"output": _text(rng, 40)},
                    }
                }
            ],
        }
        record = {
            "id": answer,
            "timestamp": _stamp(second),
            "type": "gemini",
            "content": _text(rng, rng.randint(10, 80)),
            "model": "gemini-2.5-pro",
            "thoughts": [
                {
                    "subject": _text(rng, 3),
                    "description": _text(rng, 60),
                    "timestamp": _stamp(second),
                }
            ],
            "tokens": {
                "input": rng.randint(5000, 90000),
                "output": rng.randint(50, 900),
                "cached": 4000,
                "thoughts": 120,
                "tool": 0,
                "total": 0,
            },
            "toolCalls": [call],
        }
        lines += [record, {**record, "content": _text(rng, 20)}]  # written again, complete
        lines.append(
            {
                "id": f"r{turn}-{rng.getrandbits(32):08x}",
                "timestamp": _stamp(second),
                "type": "user",
                "content": call["result"],
            }
        )
        lines.append({"$set": {"lastUpdated": _stamp(second)}})
        if rng.random() < 0.05:
            lines.append({"$rewindTo": user})
    lines.append({"$set": {"summary": _text(rng, 5)}})
    return lines


def copilot_session(rng: random.Random, session_id: str, second: int) -> Lines:
    events: Lines = [
        {
            "type": "session.start",
            "data": {
                "sessionId": session_id,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": "1.0.77",
                "startTime": _stamp(second),
                "selectedModel": "gpt-5-mini",
                "context": {"cwd": "/work/project", "branch": "main"},
            },
        }
    ]
    for turn in range(rng.randint(5, 15)):
        second += rng.randint(5, 120)
        events.append(
            {
                "type": "user.message",
                "data": {"content": _text(rng, rng.randint(8, 60)), "interactionId": f"i{turn}"},
            }
        )
        for step in range(rng.randint(1, 4)):
            call = f"call-{turn}-{step}"
            events.append(
                {
                    "type": "assistant.message",
                    "data": {
                        "messageId": _uuid(rng),
                        "content": _text(rng, rng.randint(10, 80)),
                        "reasoningText": _text(rng, 40),
                        "model": "gpt-5-mini",
                        "outputTokens": 90,
                        "toolRequests": [
                            {
                                "toolCallId": call,
                                "name": "bash",
                                "type": "function",
                                "arguments": {"command": _text(rng, 6)},
                            }
                        ],
                    },
                }
            )
            events.append(
                {
                    "type": "tool.execution_start",
                    "data": {
                        "toolCallId": call,
                        "toolName": "bash",
                        "arguments": {"command": "ls"},
                    },
                }
            )
            events.append(
                {
                    "type": "tool.execution_complete",
                    "data": {
                        "toolCallId": call,
                        "success": True,
                        "result": {"content": _text(rng, rng.randint(30, 600))},
                    },
                }
            )
    events.append(
        {
            "type": "session.shutdown",
            "data": {
                "totalPremiumRequests": 3,
                "currentModel": "gpt-5-mini",
                "modelMetrics": {
                    "gpt-5-mini": {
                        "usage": {
                            "inputTokens": 90000,
                            "outputTokens": 900,
                            "cacheReadTokens": 40000,
                        }
                    }
                },
            },
        }
    )
    parent = None
    for event in events:
        second += 1
        event.update(id=_uuid(rng), parentId=parent, timestamp=_stamp(second))
        parent = event["id"]
    return events


def qwen_session(rng: random.Random, session_id: str, second: int) -> Lines:
    lines: Lines = []
    common = {"sessionId": session_id, "cwd": "/work/project", "version": "0.18.1"}
    for _ in range(rng.randint(5, 15)):
        second += rng.randint(5, 120)
        lines.append(
            {
                **common,
                "type": "user",
                "timestamp": _stamp(second),
                "message": {"role": "user", "parts": [{"text": _text(rng, rng.randint(8, 60))}]},
            }
        )
        for step in range(rng.randint(1, 4)):
            call = {
                "id": f"call-{step}",
                "name": "run_shell_command",
                "args": {"command": _text(rng, 6)},
            }
            lines.append(
                {
                    **common,
                    "type": "system",
                    "subtype": "ui_telemetry",
                    "timestamp": _stamp(second),
                    "systemPayload": {
                        "uiEvent": {
                            "event.name": "qwen-code.api_response",
                            "input_token_count": 900,
                        }
                    },
                }
            )
            lines.append(
                {
                    **common,
                    "type": "assistant",
                    "timestamp": _stamp(second),
                    "model": "qwen3-coder-plus",
                    "message": {
                        "role": "model",
                        "parts": [
                            {"text": _text(rng, 40), "thought": True},
                            {"text": _text(rng, rng.randint(10, 80))},
                            {"functionCall": call},
                        ],
                    },
                    "usageMetadata": {
                        "promptTokenCount": rng.randint(5000, 90000),
                        "candidatesTokenCount": 300,
                        "thoughtsTokenCount": 60,
                        "cachedContentTokenCount": 4000,
                    },
                }
            )
            lines.append(
                {
                    **common,
                    "type": "tool_result",
                    "timestamp": _stamp(second),
                    "message": {
                        "role": "user",
                        "parts": [
                            {
                                "functionResponse": {
                                    **call,
                                    "response": {"output": _text(rng, rng.randint(30, 600))},
                                }
                            }
                        ],
                    },
                }
            )
    parent = None
    for line in lines:
        line.update(uuid=_uuid(rng), parentUuid=parent)
        parent = line["uuid"]
    return lines


def _anthropic_turns(rng: random.Random) -> list[tuple[str, list[dict[str, Any]]]]:
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for _ in range(rng.randint(5, 15)):
        turns.append(("user", [{"type": "text", "text": _text(rng, rng.randint(8, 60))}]))
        for step in range(rng.randint(1, 4)):
            tool = f"tu{step}-{rng.getrandbits(32):08x}"
            turns.append(
                (
                    "assistant",
                    [
                        {"type": "thinking", "thinking": _text(rng, 40)},
                        {"type": "text", "text": _text(rng, rng.randint(10, 80))},
                        {
                            "type": "tool_use",
                            "id": tool,
                            "name": "Execute",
                            "input": {"command": _text(rng, 6)},
                        },
                    ],
                )
            )
            turns.append(
                (
                    "user",
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": tool,
                            "content": _text(rng, rng.randint(30, 600)),
                        }
                    ],
                )
            )
    return turns


def droid_session(rng: random.Random, session_id: str, second: int) -> Lines:
    lines: Lines = [
        {
            "type": "session_start",
            "id": session_id,
            "title": _text(rng, 5),
            "cwd": "/work/project",
            "version": "0.81.0",
        }
    ]
    parent = session_id
    for role, content in _anthropic_turns(rng):
        second += rng.randint(1, 30)
        entry_id = _uuid(rng)
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": _stamp(second),
                "message": {"role": role, "content": content},
            }
        )
        parent = entry_id
    return lines


def cursor_session(rng: random.Random, session_id: str, second: int) -> Lines:
    lines: Lines = []
    for role, content in _anthropic_turns(rng):
        lines.append({"role": role, "message": {"content": content}})
        if role == "assistant" and rng.random() < 0.3:
            lines.append({"type": "turn_ended", "status": "success"})
    return lines


# agent: (the session generator, the file of a session below the agent dir's sessions/)
SHAPES: dict[str, tuple[Callable[[random.Random, str, int], Lines], str]] = {
    "gemini": (gemini_session, "p{n}/chats/session-{id}.jsonl"),
    "copilot": (copilot_session, "{id}/events.jsonl"),
    "qwen": (qwen_session, "-work-project-{n}/chats/{id}.jsonl"),
    "droid": (droid_session, "-work-project-{n}/{id}.jsonl"),
    "cursor": (cursor_session, "p{n}/agent-transcripts/{id}/{id}.jsonl"),
}  # fmt: skip


def jsonl_corpus(agent: str, size: int, sessions: int) -> tuple[str, int]:
    """(the agent dir, bytes) of a generated corpus: its files under ``<dir>/sessions``, each
    session grown by whole sessions' worth of turns until it holds ``size / sessions`` bytes."""
    target = DATA / f"agents-{agent}-{size // 1_000_000}mb-{sessions}"
    done = target / "DONE"
    if done.is_file():
        return str(target), int(done.read_text())
    rng = random.Random(f"{agent}:{size}:{sessions}")
    generate, place = SHAPES[agent]
    written = 0
    for number in range(sessions):
        session_id = _uuid(rng)
        content = b""
        second = number * 3600
        while len(content) < size // sessions:
            lines = generate(rng, session_id, second)
            if content:  # one session file: its opening line once
                lines = lines[1:] if agent in ("gemini", "copilot", "droid") else lines
            content += b"".join(orjson.dumps(line) + b"\n" for line in lines)
            second += 86_400
        path = target / "sessions" / place.format(n=number % 20, id=session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written += len(content)
    done.write_text(str(written))
    return str(target), written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100MB", help="size of each agent's corpus")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--agents", default=",".join(SHAPES))
    options = parser.parse_args()
    size = parse_size(options.size)
    rows = []
    for agent in options.agents.split(","):
        rows += throughput(agent, size, options.sessions, jsonl_corpus)
    print_table(rows, title="JSONL agents' sessions (baselines: 1 worker; the floor)")


if __name__ == "__main__":
    main()
