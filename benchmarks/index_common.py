"""What the index benchmarks share: the cached corpora and steps that run in a child process.

Cached corpora are read-only, so the index of a benchmark lives in its own folder (``db_path``)
next to the corpus, never inside it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import (
    CorpusManifest,
    cached_corpus,
    generate_agent_dir,
    generate_many_small_sessions,
    parse_size,
)
from xcsh_store.agents import folder_variables
from xcsh_store.homes import FOLDER_VARIABLES, NAME_VARIABLES
from xcsh_store.index import SessionIndex
from xcsh_store.index.db import load_migrations
from xcsh_store.paths import AGENT_DIR_ENV

WORK_DIR = Path(os.environ.get("XCSH_BENCH_WORK", tempfile.gettempdir())) / "xcsh-bench"
# A sync also indexes the other agents' session folders (homes.py, the plugins') when they exist:
# never the machine's own in a benchmark. $HOME and every variable that moves one of them point
# into the work folder, where none exists (children inherit the setting).
os.environ["HOME"] = str(WORK_DIR / "home")
for _variable in (*FOLDER_VARIABLES, *folder_variables()):
    if _variable != AGENT_DIR_ENV:
        os.environ[_variable] = str(WORK_DIR / f"no-{_variable.lower()}")
for _variable in NAME_VARIABLES:
    os.environ.pop(_variable, None)


def agent_corpus(size: str, sessions: int) -> CorpusManifest:
    """The realistic multi-project corpus (``1GB`` by default in the scripts)."""
    return cached_corpus(
        f"agent-{size.lower()}-{sessions}",
        generate_agent_dir,
        total_bytes=parse_size(size),
        sessions=sessions,
        projects=30,
        seed=0,
    )


def small_sessions_corpus(count: int) -> CorpusManifest:
    return cached_corpus(
        f"small-{count}", generate_many_small_sessions, count=count, seed=0, projects=50
    )


def fresh_db_path(name: str) -> str:
    """An empty place for an index database (any previous one of that name is removed)."""
    folder = WORK_DIR / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return str(folder / "index.db")


def full_sync(agent_dir: str, db_path: str) -> int:
    """A full sync from an empty index; returns the bytes it read (runs in a child)."""
    with SessionIndex.open(agent_dir, db_path=db_path) as index:
        return index.sync().bytes_read


def built_index(manifest: CorpusManifest, name: str) -> str:
    """An index of ``manifest`` kept between runs in the work folder (built when missing, or
    when the corpus or the schema changed)."""
    db_path = WORK_DIR / name / "index.db"
    stamp = db_path.with_suffix(".corpus")
    key = " ".join([manifest.cache_key, *(migration.name for migration in load_migrations())])
    if not (db_path.exists() and stamp.exists() and stamp.read_text() == key):
        db = fresh_db_path(name)
        full_sync(manifest.agent_dir, db)
        stamp.write_text(key)
    return str(db_path)
