"""The timed steps of the cost curve and of old-vs-new, each run in a process of its own.

    PYTHONPATH=<source tree> python benchmarks/index_steps.py STEP '<JSON keyword arguments>'

A step uses only the public API of whichever ``xcsh_store`` ``PYTHONPATH`` points at (and
apsw for what the API does not say: file sizes per table, the full-text vocabulary), so the
same steps measure the current tree and an older release extracted from git. The script
imports nothing else of this checkout: started as a file, its own folder comes first on
``sys.path``, not the checkout. It prints one JSON object: the step's figures, the
``xcsh_store`` it ran, its peak RSS and that of its largest child process (sync workers).

The parent side is :func:`run_step`. Clocks start after imports, since these steps are about
the index, not the interpreter; each step is a fresh process, so the first query of a
process pays for an unwarmed connection as the CLI does.
"""

from __future__ import annotations

import inspect
import itertools
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

STEPS: dict[str, Callable[..., dict[str, Any]]] = {}
# Cumulative Zipf weights of the first 500 ranks, for the words of an appended entry.
_ZIPF = list(itertools.accumulate(1 / rank for rank in range(1, 501)))


def step(function: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    STEPS[function.__name__] = function
    return function


def run_step(tree: str, name: str, **arguments: Any) -> dict[str, Any]:
    """Run step ``name`` in a new interpreter with ``tree`` first on ``PYTHONPATH``; its JSON.

    Raises ``RuntimeError`` with the child's stderr when it fails, or when the ``xcsh_store``
    it imported is not the one of ``tree``.
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, os.path.abspath(__file__), name, json.dumps(arguments)]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"step {name} on {tree} failed:\n{result.stderr[-4000:]}")
    figures = json.loads(result.stdout.splitlines()[-1])
    module = os.path.realpath(figures["xcsh_store"])
    if not module.startswith(os.path.realpath(tree) + os.sep):
        raise RuntimeError(f"step {name} imported {module}, not the tree {tree}")
    return figures


# ------------------------------------------------------------------------------------------------
# Steps (child side)


def _index() -> Any:
    from xcsh_store import SessionIndex

    return SessionIndex


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def supports_workers() -> bool:
    """Whether this tree's ``SessionIndex.sync`` takes a ``workers`` count (issue 16)."""
    return "workers" in inspect.signature(_index().sync).parameters


@step
def full_sync(agent_dir: str, db_path: str, workers: int | None = None) -> dict[str, Any]:
    """Open an empty index and sync everything; ``workers`` only where sync takes it."""
    if workers is not None and not supports_workers():
        return {"unsupported": "SessionIndex.sync has no workers option"}
    options = {} if workers is None else {"workers": workers}
    session_index = _index()

    def sync() -> Any:
        with session_index.open(agent_dir, db_path=db_path) as index:
            return index.sync(**options)

    seconds, report = _timed(sync)
    return {
        "seconds": seconds,
        "bytes_read": report.bytes_read,
        "entries_added": report.entries_added,
        "files_seen": report.files_seen,
        "workers_option": supports_workers(),
    }


@step
def index_size(db_path: str) -> dict[str, Any]:
    """index.db on disk (with its WAL), and per table (indexes counted with their table) where
    this SQLite has the dbstat table."""
    import apsw

    size = sum(
        os.path.getsize(db_path + suffix)
        for suffix in ("", "-wal")
        if os.path.exists(db_path + suffix)
    )
    connection = apsw.Connection(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = connection.execute(
            "SELECT coalesce(m.tbl_name, d.name), sum(d.pgsize) FROM dbstat AS d"
            " LEFT JOIN sqlite_schema AS m ON m.name = d.name GROUP BY 1 ORDER BY 2 DESC"
        ).fetchall()
        tables: dict[str, int] | None = {name: int(total) for name, total in rows}
    except apsw.SQLError:
        tables = None
    finally:
        connection.close()
    return {"bytes": size, "tables": tables}


@step
def nochange_sync(agent_dir: str, db_path: str) -> dict[str, Any]:
    """What ``xcsh-store sync`` does once started when nothing changed: open, sync, close."""
    session_index = _index()

    def sync() -> Any:
        with session_index.open(agent_dir, db_path=db_path) as index:
            return index.sync()

    seconds, report = _timed(sync)
    if report.files_unchanged != report.files_seen:
        raise AssertionError(f"a no-change sync found changes: {report}")
    return {"seconds": seconds, "files_seen": report.files_seen}


def realistic_entry(entry_id: str, parent_id: str, number: int) -> bytes:
    """One assistant message as the corpus writes them (thinking, text, a tool call, usage):
    about the corpus's mean entry size of 1.6 KB."""
    # The fixtures' own words, by rank (words.txt), the frequent ones most often.
    with open(os.path.join(os.path.dirname(__file__), "words.txt"), encoding="utf-8") as handle:
        words = handle.read().split()[:500]
    rng = random.Random(number)
    text = " ".join(rng.choices(words, cum_weights=_ZIPF[: len(words)], k=160))
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": text[:400]},
            {"type": "text", "text": text},
            {"type": "toolCall", "id": f"toolu_bench{number:08d}", "name": "bash",
             "arguments": {"command": "python -m pytest -q tests/test_index_sync.py"}},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-opus-4-5",
        "usage": {"input": 3, "output": 412, "cacheRead": 51234, "cacheWrite": 880,
                  "totalTokens": 52529,
                  "cost": {"input": 0.000015, "output": 0.0103, "cacheRead": 0.025617,
                           "cacheWrite": 0.0055, "total": 0.041432}},
        "stopReason": "toolUse",
        "timestamp": 1780272000000 + number * 1000,
    }  # fmt: skip
    entry = {
        "type": "message",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": f"2026-06-01T00:00:{number % 60:02d}.000Z",
        "message": message,
    }
    import orjson

    return orjson.dumps(entry) + b"\n"


@step
def append_sync(
    agent_dir: str, db_path: str, session_path: str, parent_id: str, number: int
) -> dict[str, Any]:
    """Append one realistic entry to one session (not timed), then open and sync."""
    entry_id = f"be{number:06x}"
    line = realistic_entry(entry_id, parent_id, number)
    with open(session_path, "ab") as handle:
        handle.write(line)
    session_index = _index()

    def sync() -> Any:
        with session_index.open(agent_dir, db_path=db_path) as index:
            return index.sync()

    seconds, report = _timed(sync)
    if report.entries_added != 1:
        raise AssertionError(f"appending one entry added {report.entries_added}: {report}")
    return {
        "seconds": seconds,
        "bytes_read": report.bytes_read,
        "line_bytes": len(line),
        "entry_id": entry_id,
    }


def _vocabulary(connection: Any) -> str:
    """A temporary fts5vocab table over the index's full-text table of entries."""
    rows = connection.execute(
        "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql IS NOT NULL"
    ).fetchall()
    tables = [name for name, sql in rows if re.search(r"USING\s+fts5\s*\(", sql, re.I)]
    # The entries' table by name; failing that, any that is not the prompt history's.
    preferred = [name for name in tables if name.startswith("entries")]
    (table,) = (preferred or [name for name in tables if not name.startswith("history")])[:1]
    connection.execute(
        f'CREATE VIRTUAL TABLE temp.bench_vocab USING fts5vocab(main, "{table}", row)'
    )
    return "temp.bench_vocab"


@step
def choose_queries(db_path: str, seed: int = 0) -> dict[str, Any]:
    """Queries by document frequency, from the index's own vocabulary (as
    bench_index_search.py): rare words (in 1-3 entries), middling ones (0.05 % to 3 % of the
    entries) and their pairs, and stop words (the most frequent terms) alone and in pairs."""
    import apsw

    connection = apsw.Connection(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        vocab = _vocabulary(connection)
        rows = connection.execute(f"SELECT term, doc FROM {vocab}").fetchall()
        ((entries,),) = connection.execute("SELECT count(*) FROM entries").fetchall()
    finally:
        connection.close()
    words = sorted((term, doc) for term, doc in rows if term.isascii() and term.isalpha())
    rng = random.Random(seed)

    def sample(chosen: list[str], count: int) -> list[str]:
        return rng.sample(chosen, min(count, len(chosen)))

    rare = sample([term for term, doc in words if doc <= 3 and len(term) >= 6], 20)
    low, high = max(4, entries // 2000), max(5, entries * 3 // 100)
    middling = sample([term for term, doc in words if low <= doc <= high and len(term) >= 4], 20)
    stop = [term for term, _doc in sorted(words, key=lambda item: -item[1])[:10]]
    pair = " ".join
    return {
        "rare": rare,
        "middling": middling + [pair(sample(middling, 2)) for _ in range(10)],
        "stop": stop[:5] + [pair(sample(stop, 2)) for _ in range(5)],
        "entries": entries,
    }


@step
def list_sessions(agent_dir: str, db_path: str, repeat: int = 7) -> dict[str, Any]:
    """list_sessions() of every session: the first call of the process, then the median."""
    with _index().open(agent_dir, db_path=db_path, read_only=True) as index:
        first, sessions = _timed(index.list_sessions)
        times = [_timed(index.list_sessions)[0] for _ in range(repeat)]
    return {"first": first, "median": statistics.median(times), "sessions": len(sessions)}


@step
def search(
    agent_dir: str, db_path: str, queries: dict[str, list[str]], rounds: int = 3
) -> dict[str, Any]:
    """Every query once to warm the page cache, then ``rounds`` timed rounds (snippets
    included: the hits are built as the CLI prints them)."""
    times: dict[str, list[float]] = {kind: [] for kind in queries}
    hits: dict[str, int] = dict.fromkeys(queries, 0)
    with _index().open(agent_dir, db_path=db_path, read_only=True) as index:
        for kind_queries in queries.values():
            for query in kind_queries:
                index.search(query)
        for _ in range(rounds):
            for kind, kind_queries in queries.items():
                for query in kind_queries:
                    seconds, found = _timed(lambda query=query: index.search(query))
                    times[kind].append(seconds)
                    hits[kind] += bool(found)
    return {kind: {"seconds": values, "hits": hits[kind]} for kind, values in times.items()}


@step
def context(
    agent_dir: str, db_path: str, session_path: str, leaf_id: str, repeat: int = 5
) -> dict[str, Any]:
    """SessionIndex.context of one leaf: the first call of the process, then the median."""
    with _index().open(agent_dir, db_path=db_path, read_only=True) as index:
        session = index.find_session(session_path)
        first, built = _timed(lambda: index.context(session, leaf_id))
        times = [_timed(lambda: index.context(session, leaf_id))[0] for _ in range(repeat)]
    return {"first": first, "median": statistics.median(times), "messages": len(built.messages)}


def main() -> None:
    name, arguments = sys.argv[1], json.loads(sys.argv[2])
    import xcsh_store

    figures = STEPS[name](**arguments)
    figures["xcsh_store"] = xcsh_store.__file__
    figures["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    figures["peak_rss_child"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
