"""What the cost curve and old-vs-new share: writable copies of a cached corpus, and one run of
every index step (benchmarks/index_steps.py) for one or more source trees on the same corpus.

A cached corpus is read-only, but a one-append sync must write to a session file, so each
subject syncs a copy of its own (removed at the end). Not hard links: a new link changes the
inode's ctime, which is part of a file's identity for the index, so every index built on the
cache elsewhere would see all its files changed on its next sync.

Steps of different subjects take turns (the sync of one tree, then of the other, and in
reverse order the next time), so a machine that slows down for a while slows every subject
alike.
"""

from __future__ import annotations

import os
import shutil
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.corpus import CorpusManifest
from benchmarks.harness import percentile
from benchmarks.index_steps import run_step

ROOT = str(Path(__file__).resolve().parents[1])


@dataclass
class Subject:
    """One source tree measured on one corpus, in an agent dir and index of its own."""

    label: str
    tree: str
    agent_dir: str
    db_path: str
    figures: dict[str, Any] = field(default_factory=dict)

    def run(self, name: str, **arguments: Any) -> dict[str, Any]:
        return run_step(self.tree, name, **arguments)


def append_target(manifest: CorpusManifest) -> Any:
    """The session the one-append sync appends to: the largest, so the figure shows that an
    append costs its own bytes whatever the size of the file."""
    return max(manifest.files, key=lambda item: item.bytes)


def deepest_leaf(manifest: CorpusManifest) -> Any:
    return max(manifest.files, key=lambda item: item.leaf_depth)


def writable_copy(manifest: CorpusManifest, target: Path) -> Path:
    """A fresh agent dir at ``target`` with the corpus's session and blob files (file times
    kept, as the generator set them)."""
    shutil.rmtree(target, ignore_errors=True)
    for folder in ("sessions", "blobs"):
        source = Path(manifest.agent_dir) / folder
        if source.is_dir():
            shutil.copytree(source, target / folder)
    return target


def subject(label: str, tree: str, manifest: CorpusManifest, work: Path) -> Subject:
    """A subject with a new writable agent dir and an empty place for its index."""
    agent_dir = writable_copy(manifest, work / "agent")
    (work / "db").mkdir(parents=True, exist_ok=True)
    db_path = work / "db" / "index.db"
    for suffix in ("", "-wal", "-shm", ".sync-lock"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    return Subject(label, tree, str(agent_dir), str(db_path))


def turns(subjects: list[Subject], count: int) -> Iterator[tuple[int, Subject]]:
    """``count`` runs of every subject in turns, the order reversed every other time (A B, B A,
    A B, ...), so that neither subject is always the first after some other step."""
    for number in range(count):
        for item in subjects if number % 2 == 0 else subjects[::-1]:
            yield number, item


def warm_page_cache(agent_dir: str) -> None:
    """Read every session file once, so that the first full sync measured does not pay for
    the disk and the later ones do not ride on its reads."""
    for directory, _subfolders, names in os.walk(os.path.join(agent_dir, "sessions")):
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                while handle.read(1 << 20):
                    pass


def _scratch_db(subject: Subject, name: str) -> str:
    path = Path(subject.db_path).parent / name
    path.mkdir(exist_ok=True)
    return str(path / "index.db")


def measure(
    subjects: list[Subject],
    manifest: CorpusManifest,
    *,
    repeat: int = 3,
    rounds: int = 3,
    workers: tuple[int, ...] = (),
) -> dict[str, Any]:
    """Every step for every subject (filling ``subject.figures``); returns the queries used,
    chosen from the first subject's index so that every subject answers the same ones."""
    megabytes = manifest.total_bytes / 1e6
    for item in subjects:
        warm_page_cache(item.agent_dir)
    for item in subjects:
        sync = item.run("full_sync", agent_dir=item.agent_dir, db_path=item.db_path)
        sync["mb_s"] = megabytes / sync["seconds"]
        item.figures["sync"] = sync
        item.figures["workers_option"] = sync["workers_option"]
    for count in workers:
        for item in subjects:
            db_path = _scratch_db(item, f"workers-{count}")
            run = item.run("full_sync", agent_dir=item.agent_dir, db_path=db_path, workers=count)
            shutil.rmtree(Path(db_path).parent)
            if "seconds" in run:
                run["mb_s"] = megabytes / run["seconds"]
            # Keyed by text, as the figures go through JSON (cost_curve.json).
            item.figures.setdefault("sync_workers", {})[str(count)] = run
    for item in subjects:
        size = item.run("index_size", db_path=item.db_path)
        size["ratio"] = size["bytes"] / manifest.total_bytes
        item.figures["size"] = size

    nochange: dict[str, list[float]] = {item.label: [] for item in subjects}
    for _number, item in turns(subjects, repeat):
        run = item.run("nochange_sync", agent_dir=item.agent_dir, db_path=item.db_path)
        nochange[item.label].append(run["seconds"])
    appended = append_target(manifest)
    parents = {item.label: appended.leaf_id for item in subjects}
    appends: dict[str, list[dict[str, Any]]] = {item.label: [] for item in subjects}
    for number, item in turns(subjects, repeat):
        run = item.run(
            "append_sync", agent_dir=item.agent_dir, db_path=item.db_path,
            session_path=os.path.join(item.agent_dir, appended.path),
            parent_id=parents[item.label], number=number + 1,
        )  # fmt: skip
        parents[item.label] = run["entry_id"]
        appends[item.label].append(run)
    for item in subjects:
        item.figures["nochange"] = statistics.median(nochange[item.label])
        runs = appends[item.label]
        item.figures["append"] = {
            "median": statistics.median(run["seconds"] for run in runs),
            "bytes_read": max(run["bytes_read"] for run in runs),
            "line_bytes": runs[0]["line_bytes"],
            "file_bytes": appended.bytes,
        }

    queries = subjects[0].run("choose_queries", db_path=subjects[0].db_path)
    entries = queries.pop("entries")
    for key in ("xcsh_store", "peak_rss", "peak_rss_child"):
        queries.pop(key)
    leaf = deepest_leaf(manifest)
    for item in subjects:
        item.figures["list"] = item.run(
            "list_sessions", agent_dir=item.agent_dir, db_path=item.db_path
        )
    latencies: dict[str, dict[str, list[float]]] = {
        item.label: {kind: [] for kind in queries} for item in subjects
    }
    # Two processes per subject, in turns, each timing every query ``rounds`` times.
    for _number, item in turns(subjects, 2):
        run = item.run(
            "search", agent_dir=item.agent_dir, db_path=item.db_path, queries=queries,
            rounds=rounds,
        )  # fmt: skip
        for kind in queries:
            latencies[item.label][kind] += run[kind]["seconds"]
        item.figures["search"] = {
            kind: {
                "p50": percentile(latencies[item.label][kind], 50),
                "p95": percentile(latencies[item.label][kind], 95),
                "queries": len(queries[kind]),
                "hits": run[kind]["hits"],
            }
            for kind in queries
        }
    for item in subjects:
        run = item.run(
            "context", agent_dir=item.agent_dir, db_path=item.db_path,
            session_path=os.path.join(item.agent_dir, leaf.path), leaf_id=leaf.leaf_id,
        )  # fmt: skip
        run["depth"] = leaf.leaf_depth
        item.figures["context"] = run
    return {"queries": queries, "entries": entries}


def remove_subject_files(item: Subject) -> None:
    """The agent dir (a copy) and index of a finished subject."""
    shutil.rmtree(item.agent_dir, ignore_errors=True)
    shutil.rmtree(Path(item.db_path).parent, ignore_errors=True)
