"""Sessions read whole when they change (issue 29): opencode's storage tree and its SQLite
database, and Gemini CLI's older document chats, against Gemini's JSONL chats of the same
conversations in the same run (the baseline: JSONL files are read from where they stopped).

    python -m benchmarks.bench_agents_documents [--sessions 200] [--turns 20]

One generated conversation per session (seeded: each turn a prompt, an answer with a thought
and a shell call, the call's output), written four ways below a temp home: opencode's tree
(``storage/session``, ``message``, ``part``), the same in ``opencode.db`` (as opencode's
migration puts it, tests/agent_homes.py), Gemini JSON documents and Gemini JSONL chats. For each
way, in one process: a full sync (1 worker), a sync with nothing changed, and a sync after one
session gained a turn (a part and a message file; two rows; a document rewritten; two lines
appended), each the best of 3. The figures to read are the ratios of one way's syncs to the
JSONL baseline's.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path[:0] = [
    str(Path(__file__).resolve().parents[1]),
    str(Path(__file__).parent.parent / "tests"),
]

from agent_homes import opencode_database
from isolation import isolated_environment

from benchmarks.bench_agents import _text

Turn = tuple[str, str, str, str, str]


def conversation(rng: random.Random, turns: int) -> list[Turn]:
    """(prompt, thought, answer, command, output) of each turn."""
    return [
        (_text(rng, rng.randint(8, 60)), _text(rng, 20), _text(rng, rng.randint(20, 120)),
         _text(rng, 6), _text(rng, 40))
        for _ in range(turns)
    ]  # fmt: skip


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(value))


def opencode_turn(storage: Path, session: str, number: int, turn: Turn, ms: int) -> None:
    prompt, thought, answer, command, output = turn
    user, assistant = f"msg_{session}_{number:04d}u", f"msg_{session}_{number:04d}a"
    _write(storage / "message" / session / f"{user}.json",
           {"id": user, "sessionID": session, "role": "user", "time": {"created": ms}})  # fmt: skip
    _write(
        storage / "part" / user / "prt_0.json", {"id": f"{user}p0", "type": "text", "text": prompt}
    )
    _write(
        storage / "message" / session / f"{assistant}.json",
        {"id": assistant, "sessionID": session, "role": "assistant", "time": {"created": ms + 1},
         "modelID": "gpt-4o-mini", "providerID": "openai", "cost": 0.001,
         "tokens": {"input": 900, "output": 80, "reasoning": 20,
                    "cache": {"read": 500, "write": 0}}},
    )  # fmt: skip
    parts = [
        {"type": "reasoning", "text": thought},
        {"type": "text", "text": answer},
        {"type": "tool", "callID": f"c{number}", "tool": "bash",
         "state": {"status": "completed", "input": {"command": command}, "output": output}},
    ]  # fmt: skip
    for index, part in enumerate(parts):
        _write(
            storage / "part" / assistant / f"prt_{index}.json",
            {"id": f"{assistant}p{index}", **part},
        )


def gemini_records(session: str, turns: list[Turn]) -> list[dict[str, Any]]:
    records = []
    for number, (prompt, thought, answer, command, output) in enumerate(turns):
        stamp = f"2026-01-01T00:{number // 60:02d}:{number % 60:02d}.000Z"
        # (Ids of the session's own: usage counts a message of one id and time in two
        # sessions once, as a copy.)
        records.append(
            {"id": f"{session}-u{number}", "timestamp": stamp, "type": "user", "content": prompt}
        )
        result = [{"functionResponse": {"id": f"c{number}", "name": "run_shell_command",
                                        "response": {"output": output}}}]  # fmt: skip
        records.append(
            {"id": f"{session}-g{number}", "timestamp": stamp, "type": "gemini", "content": answer,
             "model": "gemini-2.5-pro", "thoughts": [{"subject": "Plan", "description": thought}],
             "toolCalls": [{"id": f"c{number}", "name": "run_shell_command",
                            "args": {"command": command}, "status": "success", "result": result}],
             "tokens": {"input": 900, "output": 80, "cached": 500, "thoughts": 20, "total": 1000}}
        )  # fmt: skip
    return records


def _meta(session: str) -> dict[str, Any]:
    return {"sessionId": session, "projectHash": "ab" * 32, "startTime": "2026-01-01T00:00:00Z",
            "lastUpdated": "2026-01-01T00:00:00Z"}  # fmt: skip


def lay_out(home: Path, sessions: int, turns: int) -> dict[str, Callable[[], None]]:
    """Write the four ways below ``home``; {way: a change that adds a turn to one session}."""
    rng = random.Random(29)
    data = home / ".local" / "share"
    storage = data / "opencode" / "storage"
    chats = home / ".gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    conversations = [conversation(rng, turns) for _ in range(sessions)]
    for number, turns_of in enumerate(conversations):
        session = f"ses_{number:05d}"
        _write(storage / "session" / "proj" / f"{session}.json",
               {"id": session, "version": "0.15.0", "projectID": "proj", "directory": "/work",
                "title": f"session {number}", "time": {"created": 1_767_225_600_000,
                                                       "updated": 1_767_225_600_000}})  # fmt: skip
        for turn_number, turn in enumerate(turns_of):
            opencode_turn(storage, session, turn_number, turn, 1_767_225_600_000 + turn_number * 10)
        records = gemini_records(f"g{number:05d}", turns_of)
        _write(
            chats / f"session-{number:05d}.json", {**_meta(f"g{number:05d}"), "messages": records}
        )
        lines = [_meta(f"j{number:05d}"), *records]
        (chats / f"session-{number:05d}.jsonl").write_bytes(
            b"".join(orjson.dumps(line) + b"\n" for line in lines)
        )
    database = home / "db" / "opencode" / "opencode.db"
    database.parent.mkdir(parents=True)
    opencode_database(storage, database)
    extra = conversation(rng, 1)[0]

    def tree() -> None:
        opencode_turn(storage, "ses_00000", turns + len(tree_changes), extra, 1_767_225_700_000)
        tree_changes.append(1)

    def db() -> None:
        import sqlite3
        from contextlib import closing

        with closing(sqlite3.connect(database)) as connection, connection:
            number = len(db_changes)
            message = f"msg_extra_{number:04d}"
            created = 1_767_225_700_000 + number
            data = {"role": "user", "time": {"created": created}}
            part = {"type": "text", "text": extra[0]}
            connection.execute(
                "INSERT INTO message VALUES (?, 'ses_00000', ?, ?, ?)",
                (message, created, created, orjson.dumps(data).decode()),
            )
            connection.execute(
                "INSERT INTO part VALUES (?, ?, 'ses_00000', ?, ?, ?)",
                (f"{message}p0", message, created, created, orjson.dumps(part).decode()),
            )
        db_changes.append(1)

    def document() -> None:
        path = chats / "session-00000.json"
        value = orjson.loads(path.read_bytes())
        value["messages"] += gemini_records("g00000", [extra])
        path.write_bytes(orjson.dumps(value))

    def jsonl() -> None:
        with (chats / "session-00000.jsonl").open("ab") as handle:
            for line in gemini_records("j00000", [extra]):
                handle.write(orjson.dumps(line) + b"\n")

    tree_changes: list[int] = []
    db_changes: list[int] = []
    return {"opencode tree": tree, "opencode.db": db, "gemini document": document,
            "gemini jsonl": jsonl}  # fmt: skip


def _best(
    step: Callable[[], Any], repeat: int = 3, before: Callable[[], None] | None = None
) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(
    way: str, home: Path, change: Callable[[], None], work: Path
) -> tuple[float, float, float]:
    """(full sync, no-change sync, sync after a change) in seconds, one way alone in view."""
    import os

    from xcsh_store.index import SessionIndex

    environment = isolated_environment(home)
    if way == "opencode.db":
        environment["OPENCODE_DATA_DIR"] = str(home / "db" / "opencode")
    os.environ.update(environment)
    # One way in view at a time: the other ways' folders are moved aside.
    hidden = {
        "opencode tree": [home / "db"],
        "opencode.db": [home / ".gemini", home / ".local" / "share" / "opencode"],
        "gemini document": [home / "db", home / ".local" / "share" / "opencode"],
        "gemini jsonl": [home / "db", home / ".local" / "share" / "opencode"],
    }[way]
    suffix = {"gemini document": ".jsonl", "gemini jsonl": ".json"}.get(way)
    chats = home / ".gemini" / "tmp" / "p" / "chats"
    aside = work / "aside"
    aside.mkdir(exist_ok=True)
    for path in hidden:
        path.rename(aside / path.name)
    if suffix is not None:
        (aside / "chats").mkdir()
        for path in chats.glob(f"*{suffix}"):
            path.rename(aside / "chats" / path.name)
    try:
        results = []
        agent_dir = work / f"agent-{way.replace(' ', '-')}"
        (agent_dir / "sessions").mkdir(parents=True)

        def full() -> None:
            (agent_dir / "index.db").unlink(missing_ok=True)
            with SessionIndex.open(str(agent_dir)) as opened:
                opened.sync(workers=1)

        results.append(_best(full))
        with SessionIndex.open(str(agent_dir)) as opened:
            results.append(_best(lambda: opened.sync(workers=1)))
            reports = []
            results.append(_best(lambda: reports.append(opened.sync(workers=1)), before=change))
            # Each measured sync read the changed session, and that one alone.
            assert [report.files_changed for report in reports] == [1, 1, 1], (way, reports)
        return results[0], results[1], results[2]
    finally:
        for path in hidden:
            (aside / path.name).rename(path)
        if suffix is not None:
            for path in (aside / "chats").iterdir():
                path.rename(chats / path.name)
            (aside / "chats").rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        home = Path(temp) / "home"
        changes = lay_out(home, options.sessions, options.turns)
        results = {way: measure(way, home, change, Path(temp)) for way, change in changes.items()}
        shutil.rmtree(home)
    base = results["gemini jsonl"]
    print(f"{options.sessions} sessions of {options.turns} turns, best of 3, one process")
    print("| way | full sync | no-change sync | sync after one session gained a turn |")
    print("|---|---:|---:|---:|")
    for way, figures in results.items():
        cells = [f"{value * 1000:,.0f} ms ({value / baseline:.2f}×)"
                 for value, baseline in zip(figures, base, strict=True)]  # fmt: skip
        print(f"| {way} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
