"""Writing session files for tests without the SessionManager (plain v3 lines, any tree
shape), and the real sessions under fixtures/."""

from __future__ import annotations

import base64
import os
import random
import shutil
from pathlib import Path
from typing import Any

from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify as dumps

PROJECT = "--work-demo--"

# Real session files written by real agents, copied unchanged (provenance: fixtures/README.md).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PI_FIXTURES = sorted((FIXTURES / "pi").glob("*.jsonl"))


def header(session_id: str = "s1", **extra: Any) -> dict[str, Any]:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/work/demo",
        **extra,
    }


def message(
    entry_id: str, parent: str | None, role: str, text: str, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
    if role == "assistant":
        body |= {
            "provider": "anthropic",
            "model": "claude-test",
            "usage": {
                "input": 10,
                "output": 5,
                "cacheRead": 1,
                "cacheWrite": 2,
                "totalTokens": 18,
                "cost": {
                    "input": 0.1,
                    "output": 0.2,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "total": 0.3,
                },
            },
        }
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:{len(entry_id) % 60:02d}:00.000Z",
        "message": body | extra,
    }


def message_at(
    minute: int, entry_id: str, parent: str | None, role: str, text: str
) -> dict[str, Any]:
    """A :func:`message` written ``minute`` minutes past 10:00 on 2026-03-01 (for tests that
    order entries and sessions by their time)."""
    return message(entry_id, parent, role, text) | {
        "timestamp": f"2026-03-01T10:{minute:02d}:00.000Z"
    }


def write_session(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(dumps(record) + b"\n" for record in records))
    return path


def append(path: Path, *records: dict[str, Any]) -> None:
    with open(path, "ab") as handle:
        handle.write(b"".join(dumps(record) + b"\n" for record in records))


def sessions_dir(agent_dir: Path) -> Path:
    folder = agent_dir / "sessions" / PROJECT
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def copy_fixtures(agent_dir: Path, max_bytes: int | None = None) -> list[Path]:
    """Copy the real fixture sessions (those up to ``max_bytes`` long, when given)."""
    folder = agent_dir / "sessions" / "--fixtures--"
    folder.mkdir(parents=True, exist_ok=True)
    return [
        Path(shutil.copy(path, folder / path.name))
        for path in PI_FIXTURES
        if max_bytes is None or path.stat().st_size <= max_bytes
    ]


def index_other_agents_file(agent_dir: Path, root: Path, agent: str, name: str) -> Path:
    """Copy the real ``agent`` (claude, codex) fixture ``name`` into a project folder of
    ``root``, index ``root`` as that agent's root beside ``agent_dir`` and sync; the copy."""
    project = root / "project"
    project.mkdir(parents=True, exist_ok=True)
    copy = Path(shutil.copy(FIXTURES / agent / name, project / name))
    sessions_dir(agent_dir)
    with SessionIndex.open(str(agent_dir)) as index:
        index.add_root(str(root), agent=agent)
        index.sync()
    return copy


def random_tree_session(
    path: Path, seed: int, size: int = 60, blob_store: BlobStore | None = None
) -> Path:
    """A branched session: messages, model and thinking changes, labels, compactions,
    branch summaries, custom messages and (with a blob store) image refs."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = [header(f"sess-{seed}")]
    ids: list[str] = []
    leaf: str | None = None
    for number in range(size):
        entry_id = f"{seed:04x}{number:04x}"
        choice = rng.random()
        if ids and choice < 0.12:
            leaf = rng.choice(ids)  # branch: continue from an earlier entry
        base = {
            "id": entry_id,
            "parentId": leaf,
            "timestamp": f"2026-01-02T{number // 60:02d}:{number % 60:02d}:00.000Z",
        }
        kind = rng.random()
        if kind < 0.5:
            role = rng.choice(["user", "assistant", "toolResult"])
            record = message(entry_id, leaf, role, f"word{rng.randint(0, 50)} text {number}")
            record["timestamp"] = base["timestamp"]
            if blob_store is not None and rng.random() < 0.1:
                data = base64.b64encode(os.urandom(1200)).decode()
                ref = blob_store.put(base64.b64decode(data)).ref
                record["message"]["content"].append(
                    {"type": "image", "data": ref, "mimeType": "image/png"}
                )
        elif kind < 0.6:
            record = base | {
                "type": "model_change",
                "model": f"p{rng.randint(0, 2)}/m{rng.randint(0, 3)}",
            }
        elif kind < 0.65:
            record = base | {
                "type": "thinking_level_change",
                "thinkingLevel": rng.choice(["low", "high"]),
            }
        elif kind < 0.72 and ids:
            record = base | {"type": "label", "targetId": rng.choice(ids), "label": f"L{number}"}
        elif kind < 0.78 and ids:
            record = base | {
                "type": "compaction",
                "summary": f"summary {number}",
                "firstKeptEntryId": rng.choice(ids),
                "tokensBefore": 1000,
            }
        elif kind < 0.84:
            record = base | {
                "type": "branch_summary",
                "fromId": leaf or "root",
                "summary": f"branch {number}",
            }
        elif kind < 0.9:
            record = {
                "type": "custom_message",
                "customType": "note",
                "content": f"note {number}",
                "display": True,
                **base,
            }
        elif kind < 0.95:
            record = base | {
                "type": "ttsr_injection",
                "injectedRules": [f"rule{rng.randint(0, 3)}"],
            }
        else:
            record = base | {
                "type": "mode_change",
                "mode": rng.choice(["plan", "none"]),
                "data": {"n": number},
            }
        records.append(record)
        ids.append(entry_id)
        leaf = entry_id
    return write_session(path, records)


def flux_records() -> list[dict[str, Any]]:
    """A session that branches at a1: u1 -> a1 -> (u2 -> a2) | u3; the u3 branch is the one to
    continue (and so the active one)."""
    return [
        header("sess-branched", title="Flux capacitor"),
        message("u1", None, "user", "how do I configure the flux capacitor"),
        message("a1", "u1", "assistant", "set gigawatts to 1.21"),
        message("u2", "a1", "user", "abandoned idea about plutonium"),
        message("a2", "u2", "assistant", "plutonium is hard to get"),
        message("u3", "a1", "user", "what about lightning"),
    ]


# A host for the team tests: words planted where push and export must carry them.
PLANTED = ("zebrafinch", "quokkalantern", "marmosetvelvet")


def planted_host(agent_dir: Path, seeds: range = range(3)) -> Path:
    """An agent dir with random branched sessions (blob refs among them), real pi fixtures, and
    one session whose title, first prompt, answer and label hold the PLANTED words."""
    folder = sessions_dir(agent_dir)
    blobs = BlobStore(str(agent_dir / "blobs"))
    for seed in seeds:
        random_tree_session(
            folder / f"2026-01-02T00-00-0{seed}-000Z_r{seed}.jsonl", seed, 40, blobs
        )
    copy_fixtures(agent_dir, max_bytes=200_000)
    write_session(
        folder / "2026-01-03T00-00-00-000Z_planted.jsonl",
        [
            header("planted", title=f"{PLANTED[0]} title"),
            message("p1", None, "user", f"first prompt {PLANTED[1]}"),
            message("p2", "p1", "assistant", f"answer {PLANTED[2]}"),
            {"type": "label", "id": "l1", "parentId": "p2", "targetId": "p1",
             "label": PLANTED[0], "timestamp": "2026-01-03T00:00:05.000Z"},
        ],
    )  # fmt: skip
    sync(agent_dir)
    return agent_dir


def sync(agent_dir: Path) -> None:
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
