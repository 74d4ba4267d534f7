"""A realistic sample agent dir, written through the library, for ``xcsh-store demo``.

Four projects, two weeks of sessions: a branched debugging session with a branch summary and
labels, a session with a screenshot (stored as a blob) and a compaction, one with long tool
output in artifacts and two subagent outputs, a few short questions, a session from "today" whose
prompts are in history.db, a v1 file from an old agent version for ``migrate``, and one blob no
session references any more for ``gc``. What is said is data (story.py reads it); this module
writes it into a folder and indexes it.

Everything is fixed: the story happens in the two weeks before :data:`DEMO_NOW`, content and
token counts come from a seed, and session ids (Snowflakes of the story's times), entry ids and
file times come from the same seed, so two runs write identical files and the README's tour can
be followed as written. The folder's marker lists every file the demo wrote with its sha256; a
later run replaces only those files and refuses, deleting nothing, a folder holding anything
else (:mod:`xcsh_store.demo.folder`).
"""

from __future__ import annotations

import contextlib
import os
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from xcsh_store.demo.folder import prepare_demo_dir, write_marker
from xcsh_store.demo.script import (
    SessionScript,
    blob_refs,
    millis,
    png_bytes,
    set_mtime,
)
from xcsh_store.demo.story import leftovers, play, start_time, story_sessions
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.jsonl import dumps_line, read_jsonl_file
from xcsh_store.format.storage import FileSessionStorage, write_atomically
from xcsh_store.history.store import HistoryStorage, backdate_prompts
from xcsh_store.index import SessionIndex, SyncReport, remove_side_files
from xcsh_store.paths import (
    artifacts_dir_for,
    get_blobs_dir,
    get_default_session_dir,
    get_history_db_path,
    get_terminal_id,
    get_terminal_sessions_dir,
    session_file_name,
)
from xcsh_store.session.manager import SessionManager
from xcsh_store.times import iso_millis

DEFAULT_SEED = 2411
# "Now" for the story: the last session ends a few minutes before it. Fixed, so the ids, dates
# and numbers in the README are the ones every run writes.
DEMO_NOW = datetime(2026, 11, 29, 22, 5, tzinfo=UTC)
# The days the sessions fall on (the v1 file aside): DEMO_NOW's and the 13 before it.
DEMO_DAYS = 14


@dataclass
class DemoReport:
    """Where the demo put things; ``sessions`` maps a story name to its session file."""

    agent_dir: str
    sessions: dict[str, str] = field(default_factory=dict)
    legacy_file: str = ""
    history_prompts: int = 0
    orphan_blob: str = ""
    sync: SyncReport | None = None


def write_demo(agent_dir: str, seed: int = DEFAULT_SEED, now: datetime = DEMO_NOW) -> DemoReport:
    """The whole demo: check the folder, remove an earlier demo's files, write the sample,
    index it and record what was written in the marker. Raises
    :class:`~xcsh_store.demo.folder.DemoDirError` (having deleted nothing) when the folder holds
    anything the demo did not write."""
    agent_dir = os.path.abspath(agent_dir)
    prepare_demo_dir(agent_dir)
    report = build_demo(agent_dir, seed, now)
    with SessionIndex.open(agent_dir) as index:
        # The sample is the same on every machine: the folders of the user's own agents
        # stay out of its index (remembered, so the tour's commands leave them out too).
        index.find_agent_roots(False)
        report.sync = index.sync()
    # The sync read history.db, which leaves its write-ahead log behind; SQLite removes it when
    # the last connection closes (and history.db stays as the demo wrote it).
    remove_side_files(get_history_db_path(agent_dir))
    write_marker(agent_dir, files_written(report), now)
    return report


def files_written(report: DemoReport) -> list[str]:
    """Every file :func:`build_demo` wrote, relative to the agent dir: the session files, their
    artifacts, the blobs they reference, the unreferenced blob and history.db. Only these go
    into the marker, so a file that appeared in the folder while the demo ran is never taken
    for one of the demo's."""
    blobs = BlobStore(get_blobs_dir(report.agent_dir))
    paths = [get_history_db_path(report.agent_dir), blobs.path_for(report.orphan_blob)]
    for session in [*report.sessions.values(), report.legacy_file]:
        paths.append(session)
        artifacts = artifacts_dir_for(session)
        if os.path.isdir(artifacts):
            paths += [os.path.join(artifacts, name) for name in os.listdir(artifacts)]
        for record in read_jsonl_file(session):
            paths += [blobs.path_for(digest) for digest in blob_refs(record)]
    return sorted({os.path.relpath(path, report.agent_dir) for path in paths})


def build_demo(agent_dir: str, seed: int = DEFAULT_SEED, now: datetime = DEMO_NOW) -> DemoReport:
    """Write the sample agent dir into ``agent_dir`` (which should be empty; see
    :func:`~xcsh_store.demo.folder.prepare_demo_dir`). The story happens over the two weeks
    before ``now``; the same ``seed`` and ``now`` write the same files, byte for byte, with the
    same times."""
    agent_dir = os.path.abspath(agent_dir)
    now = now.astimezone(UTC)
    rng = random.Random(seed)
    # Ids have their own generator so the story (and its token counts) does not depend on how
    # many ids were drawn.
    ids = random.Random(f"xcsh-store-demo-ids-{seed}")
    report = DemoReport(agent_dir)
    prompts: list[tuple[str, str, datetime]] = []
    for session in story_sessions():
        start = start_time(session["start"], now)
        script = SessionScript(agent_dir, session["cwd"], start, session["model"], rng, ids)
        typed = play(script, session["steps"])
        prompts += [(prompt, session["cwd"], moment) for prompt, moment in typed]
        report.sessions[session["name"]] = script.finish(session.get("title"))
    report.history_prompts = _remember_prompts(agent_dir, prompts)
    outside = leftovers()
    report.legacy_file = _legacy_session(agent_dir, outside["legacy_session"], now, rng)
    report.orphan_blob = _orphan_blob(agent_dir, outside["orphan_blob"], now, rng)
    _forget_terminal(agent_dir)
    return report


def _forget_terminal(agent_dir: str) -> None:
    """The manager remembered this terminal's last session in the demo's folder; a sample has no
    terminal, and the file would differ from one terminal to the next (compatibility: Terminal id
    pinned by XCSH_TERMINAL_ID)."""
    terminal_id = get_terminal_id()
    if terminal_id is None:
        return
    folder = get_terminal_sessions_dir(agent_dir)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(folder, terminal_id))
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def _remember_prompts(agent_dir: str, prompts: list[tuple[str, str, datetime]]) -> int:
    """The prompts as xcsh saves them, then dated when they were typed."""
    path = get_history_db_path(agent_dir)
    with HistoryStorage.open(path) as history:
        for prompt, cwd, _ in prompts:
            history.add(prompt, cwd)
        history.flush()
    backdate_prompts(
        path,
        {row_id: int(moment.timestamp()) for row_id, (_, _, moment) in enumerate(prompts, 1)},
    )
    set_mtime(path, prompts[-1][2])
    return len(prompts)


def _legacy_session(
    agent_dir: str, story: dict[str, Any], now: datetime, rng: random.Random
) -> str:
    """A v1 file as an old pi wrote it: no version, no ids, no parent links."""
    start = start_time(story["start"], now)
    session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    moments = [start + timedelta(seconds=offset) for offset in story["seconds"]]
    records: list[dict[str, Any]] = [
        {
            "type": "session",
            "id": session_id,
            "timestamp": iso_millis(moments[0]),
            "cwd": story["cwd"],
        }
    ]
    for (role, text), moment in zip(story["turns"], moments[1:], strict=True):
        message: dict[str, Any] = {
            "role": role,
            "content": [{"type": "text", "text": text}],
            "timestamp": millis(moment),
        }
        if role == "assistant":
            message.update(provider=story["provider"], model=story["model"], usage=story["usage"])
        records.append({"type": "message", "timestamp": iso_millis(moment), "message": message})
    folder = get_default_session_dir(story["cwd"], agent_dir)
    path = os.path.join(folder, session_file_name(iso_millis(start), session_id))
    write_atomically(FileSessionStorage(), path, (dumps_line(record) for record in records))
    os.utime(path, (moments[-1].timestamp(), moments[-1].timestamp()))
    return path


def _orphan_blob(agent_dir: str, story: dict[str, Any], now: datetime, rng: random.Random) -> str:
    """An image pasted into a prompt that was never sent: a blob nothing references."""
    with SessionManager.in_memory(story["cwd"], agent_dir=agent_dir) as draft:
        width, height = story["image"]
        stored = draft.put_blob(png_bytes(width, height, rng))
    pasted = (now - timedelta(days=story["days_ago"])).timestamp()
    os.utime(stored.path, (pasted, pasted))
    return stored.hash
