"""Listing sessions: the index's list_sessions against parsing every file (SessionManager.list_all),
and `xcsh-store ls` as a whole process.

    python benchmarks/bench_index_list.py [--corpora 1GB:3810,2GB:10000] [--repeat 15]

Each corpus (``SIZE:SESSIONS``) has sessions of realistic sizes (log-normal), which list_all
reads in full. Targets (issue 16): list_sessions of 3,810 sessions within 5 ms and of 10,000
within 12 ms, at least 500x faster than parsing every file; `xcsh-store ls` as a whole process
within 150 ms.

Rows, per corpus: list_sessions itself (what it returns: the fields the listing shows, the
others read on first use), then the same with every field `ls` shows read from each session
(modified parsed, title or first message, shared-id mark), then the `ls` process (default
limit) and `ls --limit 0`, against the interpreter's own start (`python -c pass`). Last, the
import of what `ls` needs in a fresh interpreter; for the breakdown, run

    python -X importtime -c 'import xcsh_store.cli.verbs.listing'
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Row, compare, measure_command, print_table, time_call
from benchmarks.index_common import WORK_DIR, agent_corpus, built_index
from xcsh_store.index import SessionIndex
from xcsh_store.session.manager import SessionManager

# The most list_sessions may take, by session count (issue 16).
LIMITS = {3810: 5e-3, 10_000: 12e-3}
MIN_RATIO = 500
LS_LIMIT = 0.150


def shown_by_ls(index: SessionIndex) -> int:
    """list_sessions, then every field the ls table shows, as ls reads them."""
    sessions = index.list_sessions()
    for session in sessions:
        (session.session_id, session.modified, session.cwd, session.message_count,
         session.input_tokens + session.output_tokens, session.cost,
         session.title or session.first_message, session.id_shared)  # fmt: skip
    return len(sessions)


def ls_agent_dir(corpus_dir: str, db_path: str, name: str) -> Path:
    """An agent dir for the `ls` process: the corpus's sessions and the built index, linked
    (the cached corpus is read-only, and its index lives in the work folder)."""
    agent = WORK_DIR / f"{name}-agent"
    agent.mkdir(parents=True, exist_ok=True)
    for link, target in (("sessions", Path(corpus_dir) / "sessions"), ("index.db", db_path)):
        path = agent / link
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to(target)
    return agent


def import_seconds(module: str) -> float:
    """How long importing ``module`` takes in a fresh interpreter (after its own start)."""
    code = (
        "import time; started = time.perf_counter()\n"
        f"import {module}\n"
        "print(time.perf_counter() - started)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return float(result.stdout)


def corpus_rows(size: str, count: int, repeat: int) -> list[Row]:
    corpus = agent_corpus(size, count)
    name = f"list-{size.lower()}-{count}"
    db_path = built_index(corpus, name)
    with SessionIndex.open(corpus.agent_dir, db_path=db_path, read_only=True) as index:
        listed = time_call(index.list_sessions, repeat=repeat, label="list_sessions")
        shown = time_call(shown_by_ls, index, repeat=repeat, label="list + fields ls shows")
        assert len(listed.result) == shown.result == count
    baseline = time_call(SessionManager.list_all, agent_dir=corpus.agent_dir, repeat=1, warmup=0)
    assert len(baseline.result) == count
    agent = ls_agent_dir(corpus.agent_dir, db_path, name)
    command = [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent), "ls"]
    environment = {**os.environ, "COLUMNS": "120"}
    start = measure_command([sys.executable, "-c", "pass"], repeat=repeat)
    ls = measure_command(command, repeat=repeat, env=environment)
    every = [*command, "--limit", "0"]
    ls_all = measure_command(every, repeat=max(3, repeat // 3), env=environment)
    limit = LIMITS.get(count)
    label = f"{count:,} sessions, {corpus.total_bytes / 1e6:,.0f} MB"
    return [
        compare(f"list_sessions, {label}", listed, baseline, min_ratio=MIN_RATIO),
        compare("  time", listed, limit=limit) if limit else compare("  time", listed),
        compare(
            "  then every field ls shows read (whole first messages of over 256)", shown, baseline
        ),
        compare("xcsh-store ls (30 rows), whole process", ls, start, limit=LS_LIMIT),
        compare(f"xcsh-store ls --limit 0 ({count:,} rows), whole process", ls_all, start),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default="1GB:3810,2GB:10000", help="SIZE:SESSIONS,...")
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    rows = []
    for item in options.corpora.split(","):
        size, count = item.split(":")
        rows += corpus_rows(size, int(count), options.repeat)
    imports = sorted(import_seconds("xcsh_store.cli.verbs.listing") for _ in range(options.repeat))
    rows.append(
        compare(
            "import of what ls needs (xcsh_store.cli.verbs.listing)", imports[len(imports) // 2]
        )
    )
    print_table(
        rows,
        title="Listing sessions (baselines: SessionManager.list_all parsing every file;"
        " for processes, `python -c pass`)",
    )


if __name__ == "__main__":
    main()
