"""Blob GC never deletes a blob some session file still references (issue 13: 1, 2, 3, 4, 7)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fuzzing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manager_helpers import assistant, user
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.cli import cli
from xcsh_store.format.blobs import BLOB_REF_PREFIX, BlobStore
from xcsh_store.format.loader import load_session
from xcsh_store.index import SessionIndex
from xcsh_store.index.write.scan import SeenFile
from xcsh_store.index.write.stages.read import mark_unreadable
from xcsh_store.paths import get_sessions_dir
from xcsh_store.session.manager import SessionManager

# -- 3. refs spelled with JSON escapes ---------------------------------------------------------


def _spell(text: str, escaped: list[bool]) -> str:
    """``text`` as the inside of a JSON string, the characters marked ``escaped`` as \\uXXXX."""
    return "".join(
        f"\\u{ord(char):04{'x' if index % 2 else 'X'}}" if escaped[index % len(escaped)] else char
        for index, char in enumerate(text)
    )


_POSITIONS = ("image", "image_url", "text")  # the loader resolves the first two only
_DECOYS = (
    lambda digest: BLOB_REF_PREFIX + digest[:-1],
    lambda digest: BLOB_REF_PREFIX + digest.upper(),
    lambda digest: "blob:sha1:" + digest,
    lambda digest: BLOB_REF_PREFIX + digest + "0",
)


def _blob_line(refs: list[tuple[str, str, list[bool]]], decoys: list[tuple[int, str]]) -> str:
    """One message line holding each ref (hash, position, escape pattern) and the decoys."""
    content = ['{"type":"text","text":"look"}']
    nested = []
    texts = []
    for digest, position, escaped in refs:
        spelled = '"' + _spell(BLOB_REF_PREFIX + digest, escaped) + '"'
        if position == "image":
            content.append('{"type":"image","data":' + spelled + ',"mimeType":"image/png"}')
        elif position == "image_url":
            nested.append('{"deep":{"image_url":' + spelled + "}}")
        else:
            texts.append(spelled)
    for which, digest in decoys:
        content.append('{"type":"image","data":' + json.dumps(_DECOYS[which](digest)) + "}")
    return (
        '{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":[' + ",".join(content) + "],"
        '"details":{"nested":[' + ",".join(nested) + "]},"
        '"notes":[' + ",".join(texts) + "]}}"
    )


_digest = st.binary(min_size=1, max_size=8).map(lambda data: hashlib.sha256(data).hexdigest())
_ref = st.tuples(_digest, st.sampled_from(_POSITIONS), st.lists(st.booleans(), min_size=1))


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    refs=st.lists(_ref, max_size=4),
    decoys=st.lists(st.tuples(st.integers(0, len(_DECOYS) - 1), _digest), max_size=2),
)
def test_index_counts_the_refs_the_loader_resolves_however_spelled(agent_dir, refs, decoys):
    """Every ref the loader resolves is counted; the index also counts a well-formed ref the
    loader leaves alone (a ref in text), never a malformed one."""
    store = BlobStore(str(agent_dir / "blobs"))
    blob_of = {digest: f"bytes of {digest}".encode() for digest, _, _ in refs}
    for digest, data in blob_of.items():
        os.makedirs(store.dir, exist_ok=True)
        Path(store.path_for(digest)).write_bytes(data)
    path = sessions_dir(agent_dir) / "escaped.jsonl"
    write_session(path, [header("esc"), message("u1", None, "user", "hi")])
    with open(path, "a") as handle:
        handle.write(_blob_line(refs, decoys) + "\n")

    loaded = load_session(str(path), blob_store=store).entries
    text = json.dumps(loaded)
    # An image's data comes back as base64, an image_url as the stored text.
    resolved = {
        digest
        for digest, data in blob_of.items()
        if base64.b64encode(data).decode() in text or data.decode() in text
    }
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        counted = {row[0] for row in index.connection.execute("SELECT hash FROM blob_refs")}
    assert resolved == {digest for digest, position, _ in refs if position != "text"}
    assert counted == {digest for digest, _, _ in refs}


def test_gc_keeps_a_blob_whose_ref_is_spelled_with_an_escape(agent_dir):
    store = BlobStore(str(agent_dir / "blobs"))
    put = store.put(b"an image")
    os.utime(put.path, (0, 0))
    path = sessions_dir(agent_dir) / "escaped.jsonl"
    write_session(path, [header("esc"), message("u1", None, "user", "hi")])
    with open(path, "a") as handle:
        handle.write(_blob_line([(put.hash, "image", [False] * 75 + [True])], []) + "\n")
    with SessionIndex.open(str(agent_dir)) as index:
        report = index.blob_gc(apply=True, grace=timedelta(0))
    assert report.deleted == [] and store.has(put.hash)


# -- 1. sessions moved while gc syncs ------------------------------------------------------------

# Each loops one user action as fast as it can: argv[1] and argv[2] are what it renames.
_MOVER = """
import os, sys
first, last = sys.argv[1:3]
print("moving", flush=True)
while True:
    os.rename(first, last)
    os.rename(last, first)
"""
# (what is renamed, to what, gc runs): the runs today's code needed to lose the blob, and more.
_ACTIONS = {
    # mv of a session file (or SessionManager.move_to) between two project folders
    "file moved between folders": ("--p000--/moving.jsonl", "--p299--/moving.jsonl", 40),
    # the disk behind a symlinked project folder unmounted and mounted again
    "symlinked folder broken": ("../../disk", "../../disk-unmounted", 10),
}


def _image_session(path: Path, session_id: str, ref: str) -> None:
    record = message("u1", None, "user", "look")
    record["message"]["content"].append({"type": "image", "data": ref})
    write_session(path, [header(session_id), record])


def _old_blob(agent_dir: Path, data: bytes) -> str:
    put = BlobStore(str(agent_dir / "blobs")).put(data)
    three_days_ago = time.time() - 3 * 86400
    os.utime(put.path, (three_days_ago, three_days_ago))
    return put.ref


@pytest.mark.parametrize("action", sorted(_ACTIONS))
def test_gc_keeps_the_blob_of_a_session_moved_while_it_syncs(agent_dir, action):
    """A second process does ``action`` as fast as it can while gc loops over 300 project
    folders: a scan that lists the target before a move and the source after it misses the
    file (or finds its folder gone, or its link dangling), which must never cost its blob."""
    sessions = agent_dir / "sessions"
    for number in range(1, 300):
        (sessions / f"--p{number:03d}--").mkdir(parents=True)
    disk = agent_dir.parent / "disk"
    _image_session(disk / "moving.jsonl", "moving", ref := _old_blob(agent_dir, b"an image"))
    if action == "symlinked folder broken":
        (sessions / "--p000--").symlink_to(disk)
    else:
        disk.rename(sessions / "--p000--")
    first, last, runs = _ACTIONS[action]
    store = BlobStore(str(agent_dir / "blobs"))
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        mover = subprocess.Popen(
            [sys.executable, "-c", _MOVER, first, last], stdout=subprocess.PIPE
        )
        try:
            assert mover.stdout is not None and mover.stdout.readline() == b"moving\n"
            for _ in range(runs):
                index.blob_gc(apply=True, grace=timedelta(0))
                assert store.has(ref[len(BLOB_REF_PREFIX) :])
        finally:
            mover.kill()
            mover.wait()


def test_gc_keeps_the_blob_of_a_session_that_moved_on_before_it_could_be_read(agent_dir):
    """A sync that finds a new file which moves away before it is opened keeps a row saying
    "unreadable" with no entries. When the file turns up in another folder, it must be read
    there: taking it for the same file renamed would leave it with no rows and its blob
    unreferenced (the stress run's user chaos lost blobs this way)."""
    ref = _old_blob(agent_dir, b"an image")
    sessions = agent_dir / "sessions"
    (sessions / "--a--").mkdir(parents=True)
    (sessions / "--b--").mkdir()
    first = sessions / "--a--" / "moved.jsonl"
    _image_session(first, "moved", ref)
    info = os.stat(first)
    with SessionIndex.open(str(agent_dir)) as index:
        found = SeenFile(
            str(first), get_sessions_dir(str(agent_dir)), "--a--", info.st_size,
            info.st_mtime_ns, info.st_ino, info.st_ctime_ns,
        )  # fmt: skip
        # What a sync records when the open fails (the file was moved on after the scan).
        mark_unreadable(index.connection, found, None, "No such file or directory (errno 2)")
        second = sessions / "--b--" / "moved.jsonl"
        first.rename(second)
        report = index.blob_gc(apply=True, grace=timedelta(0))
        rows = index.connection.execute("SELECT path, status FROM files").fetchall()
    assert report.deleted == [] and BlobStore(str(agent_dir / "blobs")).has(
        ref[len(BLOB_REF_PREFIX) :]
    )
    assert rows == [(str(second), "ok")]


def test_gc_reads_a_file_that_only_looks_like_a_vanished_one(agent_dir):
    """Same inode, size and mtime as a file that vanished, but other bytes (an inode number is
    reused at once; here the file is rewritten in place with its mtime put back): the index
    must read it, not take the old file's rows for it."""
    sessions = agent_dir / "sessions"
    (sessions / "--a--").mkdir(parents=True)
    (sessions / "--b--").mkdir()
    first, second = sessions / "--a--" / "one.jsonl", sessions / "--b--" / "two.jsonl"
    _image_session(first, "aaaa", _old_blob(agent_dir, b"the first image"))
    ref = _old_blob(agent_dir, b"other image")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        before = os.stat(first)
        first.rename(second)
        _image_session(second, "bbbb", ref)  # same length: the ids and images are too
        assert os.stat(second).st_size == before.st_size
        os.utime(second, ns=(before.st_atime_ns, before.st_mtime_ns))
        report = index.blob_gc(apply=True, grace=timedelta(0))
    assert BlobStore(str(agent_dir / "blobs")).has(ref[len(BLOB_REF_PREFIX) :])
    assert len(report.deleted) == 1  # the first image, which no file references any more


# -- 2 and 7. out of reach means refuse, and the dry run predicts --apply ----------------------


def _gc(agent_dir: Path, *options: str) -> Result:
    return CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "gc", "--grace", "0s", *options])


def _assert_both_refuse(agent_dir: Path, reason: str) -> None:
    dry, applied = _gc(agent_dir), _gc(agent_dir, "--apply")
    assert (dry.exit_code, applied.exit_code) == (1, 1), (dry.output, applied.output)
    assert reason in dry.output and reason in applied.output
    assert "would be deleted; run with --apply" not in dry.output


def test_gc_refuses_while_a_symlinked_project_folder_points_nowhere(agent_dir, tmp_path):
    """An unmounted disk: the project folder is a link whose target is gone."""
    disk = tmp_path / "disk" / "project"
    ref = _old_blob(agent_dir, b"an image on a disk that is not mounted")
    _image_session(disk / "on-disk.jsonl", "on-disk", ref)
    (agent_dir / "sessions").mkdir(parents=True)
    (agent_dir / "sessions" / "--project--").symlink_to(disk)
    assert _gc(agent_dir, "--apply").exit_code == 0
    (tmp_path / "disk").rename(tmp_path / "unmounted")
    _assert_both_refuse(agent_dir, "symbolic link to something missing")
    assert BlobStore(str(agent_dir / "blobs")).has(ref[len(BLOB_REF_PREFIX) :])
    (tmp_path / "unmounted").rename(tmp_path / "disk")
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.blob_gc(apply=True, grace=timedelta(0)).refused is None
        counted = index.connection.execute("SELECT hash FROM blob_refs").fetchall()
    assert counted == [(ref[len(BLOB_REF_PREFIX) :],)]


def test_gc_dry_run_refuses_like_apply_on_a_file_name_that_is_not_utf8(agent_dir):
    _old_blob(agent_dir, b"an orphan")
    sessions = sessions_dir(agent_dir)
    write_session(sessions / "fine.jsonl", [header("fine")])
    os.rename(sessions / "fine.jsonl", os.fsencode(sessions) + b"/bad-\xff.jsonl")
    _assert_both_refuse(agent_dir, "not valid UTF-8")


def test_gc_skips_a_folder_in_blobs_named_like_a_hash(agent_dir):
    orphan = _old_blob(agent_dir, b"an orphan")[len(BLOB_REF_PREFIX) :]
    sessions_dir(agent_dir)
    folder = agent_dir / "blobs" / ("f" * 64)
    folder.mkdir()
    os.utime(folder, (0, 0))
    dry, applied = _gc(agent_dir), _gc(agent_dir, "--apply")
    assert (dry.exit_code, applied.exit_code) == (0, 0), applied.output
    for result in (dry, applied):
        assert f"skipped blobs/{'f' * 64}: not a regular file" in result.output
    assert folder.is_dir() and not (agent_dir / "blobs" / orphan).exists()
    assert _gc(agent_dir, "--apply").exit_code == 0


# -- 4. sessions in a custom session dir -----------------------------------------------------


def _session_with_an_image(cwd: str, session_dir: str) -> tuple[SessionManager, str]:
    os.makedirs(get_sessions_dir(), exist_ok=True)  # the agent has sessions of its own too
    manager = SessionManager.create(cwd, session_dir)
    raw = b"an image of a session kept elsewhere" * 64  # big enough to go to blobs/
    message = user("see")
    message["content"] = [
        {"type": "image", "data": base64.b64encode(raw).decode(), "mimeType": "image/png"}
    ]
    manager.append_message(message)
    manager.append_message(assistant())
    return manager, hashlib.sha256(raw).hexdigest()


def test_gc_keeps_the_blobs_of_a_session_in_a_custom_session_dir(agent_dir, tmp_path):
    custom = tmp_path / "elsewhere" / "sessions-of-mine"
    manager, digest = _session_with_an_image(str(tmp_path), str(custom))
    blob = agent_dir / "blobs" / digest
    os.utime(blob, (0, 0))
    recorded = agent_dir / "session-roots.json"
    assert json.loads(recorded.read_text()) == [str(custom)]
    assert recorded.stat().st_mode & 0o777 == 0o600
    synced = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "sync"])
    assert f"Also indexed: {custom}" in synced.output
    assert _gc(agent_dir, "--apply").exit_code == 0
    assert blob.exists()
    with SessionIndex.open(str(agent_dir)) as index:
        paths = [row[0] for row in index.connection.execute("SELECT path FROM files")]
    assert paths == [manager.get_session_file()]


def test_a_missing_custom_session_dir_makes_gc_refuse_and_doctor_say_so(agent_dir, tmp_path):
    custom = tmp_path / "usb-stick"
    _, digest = _session_with_an_image(str(tmp_path), str(custom))
    os.utime(agent_dir / "blobs" / digest, (0, 0))
    custom.rename(tmp_path / "unplugged")
    _assert_both_refuse(agent_dir, f"session root(s) missing: {custom}")
    doctor = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "doctor"])
    assert f"sync --remove-root {custom}" in doctor.output
    assert (agent_dir / "blobs" / digest).exists()
    dropped = CliRunner().invoke(
        cli, ["--agent-dir", str(agent_dir), "sync", "--remove-root", str(custom)]
    )
    assert (
        dropped.exit_code == 0 and json.loads((agent_dir / "session-roots.json").read_text()) == []
    )
    assert _gc(agent_dir, "--apply").exit_code == 0
    assert not (agent_dir / "blobs" / digest).exists()


def test_gc_refuses_behind_any_dangling_folder_link_even_one_it_knew_nothing_under(
    agent_dir, tmp_path
):
    """The session moved onto the disk, and the disk went before any sync saw it there."""
    disk = tmp_path / "disk"
    disk.mkdir()
    sessions = sessions_dir(agent_dir)
    (sessions.parent / "--on-disk--").symlink_to(disk)
    ref = _old_blob(agent_dir, b"an image of a session that moved to the disk")
    _image_session(sessions / "moved.jsonl", "moved", ref)
    assert _gc(agent_dir, "--apply").exit_code == 0
    (sessions / "moved.jsonl").rename(disk / "moved.jsonl")
    disk.rename(tmp_path / "unmounted")
    _assert_both_refuse(agent_dir, "symbolic link to something missing")
    assert BlobStore(str(agent_dir / "blobs")).has(ref[len(BLOB_REF_PREFIX) :])
