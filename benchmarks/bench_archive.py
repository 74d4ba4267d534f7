"""The session archive (issue 34, docs/archive.md), side by side in one run:

    python -m benchmarks.bench_archive [--size 1GB] [--sessions 2000] [--runs 2]

* size: the archive's bytes against the session bytes it keeps, on the real fixtures of
  tests/fixtures laid out as a home (every agent, opencode's database too; Claude Code and
  Codex alone) and on the
  generated corpus (benchmarks/corpus.py, the 1 GB one by default) laid out as pi's folder
  ($PI_CODING_AGENT_DIR: the same JSONL, and pi's sessions are archived);
* full sync of the generated corpus from an empty index with and without archiving (the
  store's config turns pi's archive off), in turns, each in a child process: the ratio of
  their throughputs (target: at least 0.85);
* an append sync of the fixtures home: the bytes it reads and the archive bytes it writes per
  appended line, against the line's own size;
* after every source file is deleted: ``ls``, usage by day and by model and a search for a rare
  word give the same sessions, totals and hits (only the source marks differ);
* ``restore`` of a 50 MB Claude Code session: its time (target: at most 1 s) against copying
  the same file, and the SHA-256 of the file it writes against the original's.

Targets: archive at most 0.25x the bytes it keeps; the rest as above.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from benchmarks.bench_agents import claude_session
from benchmarks.harness import measure_in_child, print_table
from benchmarks.index_common import WORK_DIR, agent_corpus
from xcsh_store.index import SessionIndex

RARE_WORD = "solana"
APPENDED_LINES = 200
RESTORED_BYTES = 50 << 20


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _archive_figures(store: Path) -> tuple[int, int]:
    """(archive bytes on disk, source bytes they keep) of a store's archive."""
    with SessionIndex.open(str(store), read_only=True) as index:
        stats = index.archive_stats()
    return stats.bytes, stats.source_bytes


def _home(name: str) -> tuple[Path, Path]:
    """A fresh home with every agent's fixtures where each keeps them, and a store for it;
    the variables that move the agents' folders point into the home."""
    from agent_homes import lay_out_agents, lay_out_documents, opencode_database
    from isolation import isolated_environment
    from real_home import lay_out_home

    base = WORK_DIR / "archive" / name
    shutil.rmtree(base, ignore_errors=True)
    home = base / "home"
    home.mkdir(parents=True)
    os.environ.update(isolated_environment(home))
    lay_out_home(home)
    lay_out_agents(home)
    lay_out_documents(home)
    # opencode 1.x's database of the same sessions beside its storage tree: each of its
    # sessions is archived too, as a database of its own rows.
    storage = home / ".local" / "share" / "opencode" / "storage"
    opencode_database(storage, storage.parent / "opencode.db")
    return home, base / "store"


def _answers(store: Path) -> dict[str, Any]:
    """What a user asks, the source marks left out."""
    with SessionIndex.open(str(store)) as index:
        index.sync(workers=1)
        listing = []
        for session in index.list_sessions():
            shape = session.to_json()
            shape.pop("source"), shape.pop("source_gone_at")
            listing.append(shape)
        return {
            "ls": listing,
            "usage by day": [row.to_json() for row in index.usage("day")],
            "usage by model": [row.to_json() for row in index.usage("model")],
            "search": [(hit.session_id, hit.entry_id) for hit in index.search(RARE_WORD, limit=50)],
        }


def fixtures_figures() -> dict[str, Any]:
    """Size, append, deletion and restore on the real fixtures laid out as a home."""
    home, store = _home("fixtures")
    with SessionIndex.open(str(store)) as index:
        index.sync(workers=1)
    archive, kept = _archive_figures(store)
    claude_codex = [_folder_bytes(store / "archive" / agent) for agent in ("claude", "codex")]
    kept_claude_codex = _folder_bytes(home / ".claude") + _folder_bytes(home / ".codex")
    figures: dict[str, Any] = {
        "fixtures: sessions kept (MB)": kept / 1e6,
        "fixtures: archive (MB)": archive / 1e6,
        "fixtures: archive / kept": archive / kept,
        "Claude Code and Codex: archive / kept": sum(claude_codex) / kept_claude_codex,
    }
    figures.update(_appends(home, store))
    before = _answers(store)
    for folder in (".claude", ".codex", ".pi", ".omp", ".gemini", ".copilot", ".qwen",
                   ".factory", ".cursor", ".local/share/opencode"):  # fmt: skip
        shutil.rmtree(home / folder, ignore_errors=True)
    after = _answers(store)
    figures["after deleting every source: same answers"] = {
        key: before[key] == after[key] for key in before
    }
    figures["sessions listed (before, after)"] = (len(before["ls"]), len(after["ls"]))
    figures["search hits (before, after)"] = (len(before["search"]), len(after["search"]))
    figures.update(_restore(home, store))
    return figures


def _appends(home: Path, store: Path) -> dict[str, Any]:
    """APPENDED_LINES lines appended across the Claude Code and Codex files (each a copy of
    one of its file's lines), then one sync."""
    rng = random.Random(0)
    files = sorted([*(home / ".claude").rglob("*.jsonl"), *(home / ".codex").rglob("*.jsonl")])
    appended = 0
    for _ in range(APPENDED_LINES):
        path = rng.choice(files)
        line = rng.choice(path.read_bytes().splitlines(keepends=True))
        line = line if line.endswith(b"\n") else line + b"\n"
        with open(path, "ab") as stream:
            stream.write(line)
        appended += len(line)
    with SessionIndex.open(str(store)) as index:
        report = index.sync(workers=1)
    return {
        "append sync: bytes appended per line": appended / APPENDED_LINES,
        "append sync: source bytes read / appended": report.bytes_read / appended,
        "append sync: archive bytes written per line": report.archive_bytes_written
        / APPENDED_LINES,
    }


def _restore(home: Path, store: Path) -> dict[str, Any]:
    """A 50 MB Claude Code session archived, deleted, restored."""
    session_id = str(uuid.UUID(int=random.Random(1).getrandbits(128)))
    path = home / ".claude" / "projects" / "-work-project" / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_session(random.Random(2), session_id, RESTORED_BYTES, 0))
    original = hashlib.sha256(path.read_bytes()).hexdigest()
    size = path.stat().st_size
    with SessionIndex.open(str(store)) as index:
        index.sync(workers=1)
    copy = path.with_suffix(".copy")
    started = time.perf_counter()
    shutil.copyfile(path, copy)
    with open(copy, "rb+") as stream:
        os.fsync(stream.fileno())
    copied = time.perf_counter() - started
    copy.unlink()
    path.unlink()
    with SessionIndex.open(str(store)) as index:
        index.sync(workers=1)
        session = index.find_session(session_id)
        started = time.perf_counter()
        restored = index.restore(session)
        seconds = time.perf_counter() - started
    return {
        "restore: session (MB)": size / 1e6,
        "restore: seconds": seconds,
        "restore: seconds of a plain copy (cp + fsync)": copied,
        "restore: SHA-256 equals the original's": restored.sha256 == original
        and hashlib.sha256(path.read_bytes()).hexdigest() == original,
    }


def _full_sync(store: str, pi_dir: str, archive: bool) -> tuple[int, int]:
    """A full sync of pi's folder into a fresh store (runs in a child); (bytes read, archive
    bytes written)."""
    os.environ["PI_CODING_AGENT_DIR"] = pi_dir
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "xcsh-store" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("" if archive else "[agents.pi]\narchive = false\n")
    shutil.rmtree(store, ignore_errors=True)
    with SessionIndex.open(store) as index:
        report = index.sync()
    return report.bytes_read, report.archive_bytes_written


def corpus_figures(size: str, sessions: int, runs: int) -> dict[str, Any]:
    """Full syncs of the generated corpus as pi's folder, with and without archiving."""
    corpus = agent_corpus(size, sessions)
    base = WORK_DIR / "archive" / "corpus"
    shutil.rmtree(base, ignore_errors=True)
    home = base / "home"
    home.mkdir(parents=True)
    from isolation import isolated_environment

    os.environ.update(isolated_environment(home))
    megabytes = corpus.total_bytes / 1e6
    timings: dict[bool, list[float]] = {True: [], False: []}
    written = 0
    for _ in range(runs):
        for archive in (False, True):
            store = str(base / ("with" if archive else "without"))
            run = measure_in_child(_full_sync, store, str(corpus.agent_dir), archive)
            timings[archive] += run.seconds
            written = run.result[1] if archive else written
    archive_bytes, kept = _archive_figures(base / "with")
    best = {archive: min(seconds) for archive, seconds in timings.items()}
    return {
        "corpus (MB)": megabytes,
        "corpus: archive (MB)": archive_bytes / 1e6,
        "corpus: archive / kept": archive_bytes / kept,
        "corpus: archive bytes written by the sync (MB)": written / 1e6,
        "full sync without archiving (MB/s, best of runs)": megabytes / best[False],
        "full sync with archiving (MB/s, best of runs)": megabytes / best[True],
        "throughput with / without archiving": best[False] / best[True],
        "runs (seconds, without)": [round(s, 2) for s in timings[False]],
        "runs (seconds, with)": [round(s, 2) for s in timings[True]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--skip-corpus", action="store_true")
    options = parser.parse_args()
    figures = fixtures_figures()
    if not options.skip_corpus:
        figures.update(corpus_figures(options.size, options.sessions, options.runs))
    print_table(
        [[name, _shown(value)] for name, value in figures.items()],
        ["figure", "value"],
        title="The session archive",
    )
    print(json.dumps({"load average": os.getloadavg()}))


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if value < 100 else f"{value:,.0f}"
    return json.dumps(value) if not isinstance(value, str) else value


if __name__ == "__main__":
    main()
