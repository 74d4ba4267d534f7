"""Usage first for the agents whose lean read is their own reader's (Gemini CLI, Qwen Code,
GitHub Copilot CLI; issue 40, item 1), where ccusage 20.0.24 has no report to set beside it:
the first ``usage`` (the lean pass, ``sync(entries=False)``: index/write/lean/by_reader.py)
against the full read of the same files in the same run.

    python -m benchmarks.bench_lean_agents [--size 100MB] [--sessions 200] [--rounds 1]
        [--agents gemini,qwen,copilot,gemini-document,opencode]

* the corpora of bench_agents_jsonl.py (seeded files shaped like each agent's own, usage on
  every answer; written once under $XCSH_BENCH_DATA and reused); for ``gemini-document``
  (Gemini CLI's older whole-document chats) and ``opencode`` (its storage tree), the layout of
  bench_agents_documents.py (``--sessions`` sessions of 20 turns, usage on every answer) below
  the home, where the agent keeps it, and the lean pass taken whatever the bytes to read
  (sync.TEXT_LATER_MIN_BYTES 0: the layout is far smaller than the 32 MB that make it
  worth it in use; ``--size`` does not apply);
* each step a fresh process on a fresh index, $HOME an empty folder: ``lean`` the usage-first
  sync and ``usage --by day``; ``entries`` the full read with the search text put off (what the
  first ``usage`` did for these agents before: text_later.py), then usage; ``full`` a whole
  sync with the search text, then usage;
* CPU seconds of each process (getrusage of the children) and wall time; ratios against the
  ``entries`` step of the same round; the totals (tokens and cost) of each step, which must be
  equal.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_agents_jsonl import jsonl_corpus
from benchmarks.bench_first_usage import CPU, ROOT, timed
from benchmarks.corpus import parse_size
from benchmarks.harness import compare, print_table
from benchmarks.index_common import WORK_DIR

# argv[1] the step, argv[2] the agent dir (its sessions/ the corpus), argv[3] the index file,
# argv[4] 1 to take the lean pass whatever the bytes to read.
_CHILD = """
import json, sys
from xcsh_store.index import SessionIndex

step, agent_dir, db_path, lean_always = sys.argv[1:5]
if lean_always == "1":
    from xcsh_store.index.write import sync
    sync.TEXT_LATER_MIN_BYTES = 0
with SessionIndex.open(agent_dir, db_path=db_path) as index:
    report = index.sync(text=step == "full", entries=step != "lean", workers=1)
    rows = index.usage(by="day")
    totals = [sum(getattr(row, name) for row in rows) for name in
              ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")]
    totals.append(round(sum(row.cost or 0 for row in rows), 6))
    pending = index.connection.execute(
        "SELECT count(*) FROM files WHERE entries_pending = 1").fetchone()[0]
    print(json.dumps({"totals": totals, "entries_pending": pending}))
"""
STEPS = ("lean", "entries", "full")
# Every folder an agent's sessions may be looked for in: an empty one (only the corpus counts).
_FOLDER_VARIABLES = (
    "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "QWEN_HOME", "COPILOT_HOME",
    "PI_CODING_AGENT_DIR", "OMP_CODING_AGENT_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
    "AMP_DATA_DIR", "OPENCODE_DATA_DIR",
)  # fmt: skip


# The agents whose sessions are documents or trees of files: {agent: (the layout's folder
# below the home, the variable that names where the agent looks, its value below the home)}.
DOCUMENT_AGENTS = {
    "gemini-document": (".gemini", "GEMINI_CLI_HOME", ""),
    "opencode": (".local/share/opencode/storage", "OPENCODE_DATA_DIR", ".local/share/opencode"),
}


def _environment() -> dict[str, str]:
    import os

    home = WORK_DIR / "lean-agents-home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    folders = {variable: str(home / variable.lower()) for variable in _FOLDER_VARIABLES}
    return {**os.environ, "HOME": str(home), **folders, "PYTHONPATH": str(ROOT)}


def _document_corpus(agent: str, sessions: int, environment: dict[str, str]) -> tuple[str, int]:
    """bench_agents_documents.py's layout of ``agent`` below the home (the other ways'
    folders removed); (an empty agent dir, the bytes of the agent's sessions)."""
    from benchmarks.bench_agents_documents import lay_out

    home = Path(environment["HOME"])
    lay_out(home, sessions, 20)
    folder, variable, value = DOCUMENT_AGENTS[agent]
    shutil.rmtree(home / "db")
    if agent == "opencode":
        shutil.rmtree(home / ".gemini")
    else:
        shutil.rmtree(home / ".local")
        for path in (home / ".gemini").rglob("*.jsonl"):
            path.unlink()
    environment[variable] = str(home / value)
    agent_dir = WORK_DIR / f"lean-agents-{agent}-xcsh"
    shutil.rmtree(agent_dir, ignore_errors=True)
    (agent_dir / "sessions").mkdir(parents=True)
    written = sum(path.stat().st_size for path in (home / folder).rglob("*") if path.is_file())
    return str(agent_dir), written


def measure(agent: str, size: int, sessions: int, rounds: int) -> dict[str, Any]:
    environment = _environment()
    documents = agent in DOCUMENT_AGENTS
    if documents:
        agent_dir, written = _document_corpus(agent, sessions, environment)
    else:
        agent_dir, written = jsonl_corpus(agent, size, sessions)
    CPU.clear()
    times: dict[str, list[float]] = {}
    found: dict[str, dict[str, Any]] = {}
    for _round in range(rounds):
        for step in STEPS:
            db_path = WORK_DIR / f"lean-agents-{agent}-{step}.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db_path}{suffix}").unlink(missing_ok=True)
            # Nothing of an earlier step's (or agent's): the archive beside the index keeps
            # the sessions it read, which a later index would read back as sessions gone.
            shutil.rmtree(WORK_DIR / "archive", ignore_errors=True)
            if documents:
                shutil.rmtree(agent_dir)
                (Path(agent_dir) / "sessions").mkdir(parents=True)
            argv = [
                sys.executable,
                "-c",
                _CHILD,
                step,
                agent_dir,
                str(db_path),
                str(int(documents)),
            ]
            seconds, output = timed(argv, environment, step)
            times.setdefault(step, []).append(seconds)
            found[step] = json.loads(output)
    return {
        "bytes": written,
        "wall": {step: statistics.median(values) for step, values in times.items()},
        "cpu": {step: statistics.median(values) for step, values in CPU.items()},
        "found": found,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="100MB", help="size of each agent's corpus")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--agents", default="gemini,qwen,copilot")
    options = parser.parse_args()
    rows = []
    for agent in options.agents.split(","):
        figures = measure(agent, parse_size(options.size), options.sessions, options.rounds)
        megabytes = figures["bytes"] / 1e6
        size = f"{megabytes:.0f} MB" if megabytes >= 10 else f"{megabytes:.1f} MB"
        wall, cpu = figures["wall"], figures["cpu"]
        rows += [
            compare(f"{agent}: first usage, lean ({size}), wall", wall["lean"],
                    wall["entries"]),
            compare(f"{agent}:   the same, CPU seconds", cpu["lean"], cpu["entries"]),
            compare(f"{agent}: a whole sync with search text, CPU seconds", cpu["full"],
                    cpu["entries"]),
        ]  # fmt: skip
        for step, result in figures["found"].items():
            print(
                f"{agent} {step}: totals (input, output, cache read, cache write, cost)"
                f" {result['totals']}, files with entries pending {result['entries_pending']}"
            )
        equal = len({str(result["totals"]) for result in figures["found"].values()}) == 1
        print(f"{agent}: the three steps' totals {'are equal' if equal else 'DIFFER'}")
    print_table(rows, title="Usage first by the agents' readers (baseline: full read, text later)")


if __name__ == "__main__":
    main()
