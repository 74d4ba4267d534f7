"""Claude Code and Codex files are append-only, like xcsh files: a sync reads only what was added
since the last one. Random Claude- and Codex-shaped files written a piece at a time (cut anywhere,
mid-line too), with a sync after each piece, must give the index one full read gives: ``verify``
(which parses every file afresh into a scratch index and compares every row) finds nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_builder import FIXTURES

from xcsh_store.index import SessionIndex

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
_MODELS = ("claude-sonnet-4-20250514", "claude-opus-4-6", "gpt-5", "gpt-5.4")


def _word(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(_WORDS))


def _stamp(second: int) -> str:
    return f"2026-01-01T00:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


@st.composite
def claude_lines(draw: st.DrawFn) -> list[bytes]:
    """A Claude Code transcript: a tree of user/assistant lines (some streamed as several
    lines sharing message.id, usage growing), titles, sidechains, progress and compactions."""
    lines: list[dict[str, Any]] = []
    uuids: list[str] = []
    for number in range(draw(st.integers(1, 25))):
        kind = draw(
            st.sampled_from(["user", "assistant", "assistant", "summary", "progress", "system"])
        )
        parent = draw(st.sampled_from([None, *uuids[-3:]])) if uuids else None
        uuid = f"u{number}"
        base = {"uuid": uuid, "parentUuid": parent, "sessionId": "s", "timestamp": _stamp(number)}
        base["isSidechain"] = draw(st.booleans())
        if kind == "summary":
            lines.append({"type": "summary", "summary": draw(st.sampled_from(_WORDS))})
            continue
        if kind == "progress":
            lines.append({**base, "type": "progress", "data": {"type": "hook"}})
        elif kind == "system":
            lines.append(
                {**base, "type": "system", "subtype": "compact_boundary", "parentUuid": None,
                 "logicalParentUuid": parent}
            )  # fmt: skip
        elif kind == "user":
            text = " ".join(draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3)))
            lines.append({**base, "type": "user", "message": {"role": "user", "content": text}})
        else:
            message_id = f"m{number}"
            for part in range(draw(st.integers(1, 3))):
                lines.append(
                    {**base, "uuid": f"{uuid}.{part}", "type": "assistant", "requestId": "r",
                     "message": {"id": message_id, "role": "assistant",
                                 "model": draw(st.sampled_from(_MODELS)),
                                 "content": [{"type": "text", "text": _word(draw)}],
                                 "usage": {"input_tokens": 3, "output_tokens": part + 1,
                                           "cache_read_input_tokens": 10}}}
                )  # fmt: skip
                base["parentUuid"] = f"{uuid}.{part}"
            uuid = f"{uuid}.{part}"
        uuids.append(uuid)
    return [orjson.dumps(line) + b"\n" for line in lines]


@st.composite
def codex_lines(draw: st.DrawFn) -> list[bytes]:
    """A Codex rollout: session_meta (perhaps of a fork, with a replayed prefix), turns with
    their model, prompts, answers, tool calls, token counts (some written twice), a title, and
    a malformed line now and then."""
    forked = draw(st.booleans())
    meta = {"id": "child" if forked else "thread", "timestamp": _stamp(0), "cwd": "/w"}
    if forked:
        meta["forked_from_id"] = "parent"
    lines: list[bytes] = [
        orjson.dumps({"timestamp": _stamp(0), "type": "session_meta", "payload": meta})
    ]
    total = 0
    for number in range(1, draw(st.integers(1, 25))):
        second = 0 if forked and number < 3 else number  # the replayed prefix: the fork's second
        kind = draw(
            st.sampled_from(
                ["turn", "user", "answer", "call", "tokens", "tokens", "name", "bad", "rollback"]
            )
        )
        if kind == "bad":
            lines.append(b"{not json")
            continue
        payload: dict[str, Any]
        if kind == "turn":
            envelope, payload = "turn_context", {"model": draw(st.sampled_from(_MODELS))}
        elif kind == "user":
            envelope, payload = (
                "event_msg",
                {"type": "user_message", "message": draw(st.sampled_from(_WORDS))},
            )
        elif kind == "answer":
            payload = {"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": _word(draw)}]}  # fmt: skip
            envelope = "response_item"
        elif kind == "call":
            envelope = "response_item"
            payload = {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"cmd": "ls"}',
                "call_id": "c",
            }
        elif kind == "rollback":
            envelope = "event_msg"
            payload = {"type": "thread_rolled_back", "num_turns": draw(st.integers(1, 3))}
        elif kind == "name":
            envelope, payload = (
                "event_msg",
                {"type": "thread_name_updated", "thread_name": draw(st.sampled_from(_WORDS))},
            )
        else:
            if not draw(st.booleans()):  # the same event again: same running total
                total += draw(st.integers(1, 50))
            usage = {"input_tokens": 20, "cached_input_tokens": 5, "output_tokens": 7}
            info = {"last_token_usage": usage, "total_token_usage": {"input_tokens": total}}
            payload = {"type": "token_count", "info": info}
            envelope = "event_msg"
        lines.append(
            orjson.dumps({"timestamp": _stamp(second), "type": envelope, "payload": payload})
        )
    return [line + b"\n" for line in lines]


def _write_in_pieces(index: SessionIndex, path: Path, content: bytes, cuts: list[int]) -> None:
    written = 0
    with path.open("wb") as stream:
        for cut in [*sorted({min(cut, len(content)) for cut in cuts}), len(content)]:
            stream.write(content[written:cut])
            stream.flush()
            written = cut
            index.sync(workers=1)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    agent=st.sampled_from(["claude", "codex"]),
    data=st.data(),
)
def test_appending_with_syncs_in_between_equals_one_full_read(
    index: SessionIndex, tmp_path: Path, agent: str, data: st.DataObject
):
    lines = data.draw(claude_lines() if agent == "claude" else codex_lines())
    content = b"".join(lines)
    cuts = data.draw(st.lists(st.integers(1, max(1, len(content))), max_size=6))
    root = tmp_path / agent
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    index.add_root(str(root))
    _write_in_pieces(index, root / f"{agent}-session.jsonl", content, cuts)
    report = index.verify()
    assert report.clean, report
    index.remove_root(str(root))
    index.sync(workers=1)


def test_a_real_file_appended_line_by_line_equals_one_full_read(
    index: SessionIndex, tmp_path: Path
):
    """The real streamed Claude file (responses cut into several lines sharing message.id) and
    a real Codex rollout, a sync after every few lines."""
    root = tmp_path / "mixed"
    root.mkdir()
    index.add_root(str(root))
    for source in (
        FIXTURES / "claude" / "apanloco__random__claude-session.jsonl",
        FIXTURES / "codex" / "Shyaar__beam_v1__codex-session.jsonl",
    ):
        content = source.read_bytes()
        ends = [position + 1 for position, byte in enumerate(content) if byte == 0x0A]
        _write_in_pieces(index, root / source.name, content, ends[::7])
    report = index.verify()
    assert report.clean, report
    totals = index.connection.execute(
        "SELECT input_tokens, output_tokens, cache_read_tokens FROM sessions ORDER BY path"
    ).fetchall()
    # The same figures as one read of each file (tests/test_agents.py derives them with jq).
    assert totals == [(16972, 1586, 77440), (42, 6911, 506652)]
