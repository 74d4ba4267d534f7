"""A realistic sample agent dir, written through the library, for ``xcsh-store demo``.

Four projects, two weeks of sessions: a branched debugging session with a branch summary and
labels, a session with a screenshot (stored as a blob) and a compaction, one with long tool
output in artifacts and two subagent outputs, a few short questions, a session from "today" whose
prompts are in history.db, a v1 file from an old agent version for ``migrate``, and one blob no
session references any more for ``gc``.

Everything is fixed: the story happens in the two weeks before :data:`DEMO_NOW`, content and
token counts come from a seed, and session ids (Snowflakes of the story's times), entry ids and
file times come from the same seed, so two runs write identical files and the README's tour can
be followed as written. The folder's marker lists every file the demo wrote with its sha256; a
later run replaces only those files and refuses, deleting nothing, a folder holding anything
else (:func:`prepare_demo_dir`).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import random
import stat
import struct
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from xcsh_store.artifacts.store import AgentOutputManager
from xcsh_store.errors import XcshStoreError
from xcsh_store.format.blobs import BlobStore, parse_blob_ref
from xcsh_store.format.jsonl import dumps_line, read_jsonl_file
from xcsh_store.format.storage import FileSessionStorage, write_atomically
from xcsh_store.history.store import HistoryStorage, backdate_prompts
from xcsh_store.index import SessionIndex, SyncReport, remove_side_files
from xcsh_store.paths import (
    _SNOWFLAKE_EPOCH_MS,
    FILE_MODE,
    INDEX_DB_NAME,
    artifacts_dir_for,
    ensure_private_dir,
    get_blobs_dir,
    get_default_session_dir,
    get_history_db_path,
    get_terminal_id,
    get_terminal_sessions_dir,
    session_file_name,
)
from xcsh_store.session.manager import SessionManager
from xcsh_store.times import iso_millis

DEMO_MARKER = ".xcsh-store-demo"
DEFAULT_SEED = 2411
# "Now" for the story: the last session ends a few minutes before it. Fixed, so the ids, dates
# and numbers in the README are the ones every run writes.
DEMO_NOW = datetime(2026, 11, 29, 22, 5, tzinfo=UTC)
# The days the sessions fall on (the v1 file aside): DEMO_NOW's and the 13 before it.
DEMO_DAYS = 14
# The index is a mirror of the demo's files that every sync rewrites; a later run may replace it
# whatever it holds (the files it mirrors are checked).
INDEX_FILES = tuple(
    INDEX_DB_NAME + suffix for suffix in ("", "-wal", "-shm", "-journal", ".sync-lock")
)
# SQLite's companions of history.db that a reader leaves behind: the shared-memory index never
# holds data, and an empty write-ahead log holds none either.
HISTORY_COMPANIONS = ("history.db-shm", "history.db-wal")
# Refusals name this many of the files that are in the way.
SHOWN_FOREIGN_FILES = 3

HOME = "/home/alex/src"
WEBAPP, API, INFRA, SCRIPTS = (f"{HOME}/{name}" for name in ("webapp", "api", "infra", "scripts"))

# Dollars per million tokens: input, output, cache read, cache write.
PRICES = {
    "anthropic/claude-sonnet-4-5": (3.0, 15.0, 0.30, 3.75),
    "openai/gpt-5": (1.25, 10.0, 0.125, 0.0),
    "google/gemini-2.5-pro": (1.25, 10.0, 0.31, 0.0),
}
APIS = {"anthropic": "anthropic-messages", "openai": "openai-responses", "google": "google"}


class DemoDirError(XcshStoreError):
    """The demo would overwrite a folder, or files, that it did not write."""


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
    index it and record what was written in the marker. Raises :class:`DemoDirError` (having
    deleted nothing) when the folder holds anything the demo did not write."""
    agent_dir = os.path.abspath(agent_dir)
    prepare_demo_dir(agent_dir)
    report = build_demo(agent_dir, seed, now)
    with SessionIndex.open(agent_dir) as index:
        # The sample is the same on every machine: the user's own Claude Code and Codex folders
        # stay out of its index (remembered, so the tour's commands leave them out too).
        index.find_agent_roots(False)
        report.sync = index.sync()
    # The sync read history.db, which leaves its write-ahead log behind; SQLite removes it when
    # the last connection closes (and history.db stays as the demo wrote it).
    remove_side_files(get_history_db_path(agent_dir))
    write_marker(agent_dir, files_written(report), now)
    return report


def prepare_demo_dir(agent_dir: str) -> None:
    """Make ``agent_dir`` ready for :func:`build_demo`: a new or empty folder is used as it is;
    one holding an earlier demo loses that demo's files (each checked against the sha256 the
    marker recorded) and its index. Anything else, a file the demo did not write or one that
    changed since, makes it refuse before deleting anything: the demo never touches a file
    that is not its own."""
    if not os.path.isdir(agent_dir) or not os.listdir(agent_dir):
        ensure_private_dir(agent_dir)
        return
    marker = _read_marker(agent_dir)
    recorded: dict[str, Any] = marker["files"]
    found = list(_folder_contents(agent_dir))
    foreign = [
        path
        for path in found
        if not _replaceable(agent_dir, path) and recorded.get(path) != _sha256(agent_dir, path)
    ]
    if foreign:
        shown = ", ".join(
            f"{path} (changed)" if path in recorded else path
            for path in foreign[:SHOWN_FOREIGN_FILES]
        )
        more = len(foreign) - SHOWN_FOREIGN_FILES
        raise DemoDirError(
            f"{agent_dir} holds {len(foreign)} file{'s' if len(foreign) != 1 else ''} "
            f"`xcsh-store demo` did not write: {shown}{f' and {more} more' if more > 0 else ''}; "
            "nothing was deleted (move them away or give the demo another folder with "
            "--agent-dir)"
        )
    # Only what was found inside the folder is deleted, never a path the marker names: a
    # marker is a file anyone could have edited.
    for path in found:
        full = os.path.join(agent_dir, path)
        if not _replaceable(agent_dir, path) and _sha256(agent_dir, path) != recorded.get(path):
            raise DemoDirError(f"{full} changed while the demo was replacing its files")
        os.unlink(full)
    listed = set(marker["dirs"])
    for path in sorted(_folders(agent_dir), key=lambda name: name.count("/"), reverse=True):
        if path in listed:
            try:
                os.rmdir(os.path.join(agent_dir, path))
            except OSError as error:
                # A folder something was put in since stays as it is, with its content.
                if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
    # The marker stays until the new one replaces it: a run that is interrupted leaves files
    # the next run recognises (the demo writes the same bytes every time).


def _replaceable(agent_dir: str, path: str) -> bool:
    """The index (a mirror of the demo's files) and history.db's companions while they hold no
    data: a later run replaces these whatever they hold, as a sync rewrites them."""
    if path in INDEX_FILES:
        return True
    if path not in HISTORY_COMPANIONS:
        return False
    try:
        info = os.lstat(os.path.join(agent_dir, path))
    except FileNotFoundError:
        return True
    return stat.S_ISREG(info.st_mode) and (path.endswith("-shm") or info.st_size == 0)


def _read_marker(agent_dir: str) -> dict[str, Any]:
    """The marker's record of the demo's files; a folder without one is not a demo."""
    path = os.path.join(agent_dir, DEMO_MARKER)
    if not os.path.lexists(path):
        raise DemoDirError(
            f"{agent_dir} is not empty and was not made by `xcsh-store demo`; "
            "give the demo another folder with --agent-dir"
        )
    try:
        with open(path, "rb") as handle:
            marker = json.loads(handle.read())
    except (OSError, ValueError):
        marker = None
    if (
        not isinstance(marker, dict)
        or not isinstance(marker.get("files"), dict)
        or not isinstance(marker.get("dirs"), list)
    ):
        raise DemoDirError(
            f"{agent_dir} has a demo marker that does not list the demo's files (an older "
            "xcsh-store wrote it, or it was edited); nothing was deleted: delete the folder "
            "yourself or give the demo another folder with --agent-dir"
        )
    return marker


def _folder_contents(agent_dir: str) -> Iterator[str]:
    """The relative path of everything in the folder that is not a folder (symlinks to folders
    included), the marker aside, in a stable order."""
    for folder, dirs, names in os.walk(agent_dir):
        dirs.sort()
        relative = os.path.relpath(folder, agent_dir)
        linked = [name for name in dirs if os.path.islink(os.path.join(folder, name))]
        for name in sorted(names + linked):
            path = name if relative == "." else f"{relative}/{name}"
            if path != DEMO_MARKER:
                yield path


def _folders(agent_dir: str) -> Iterator[str]:
    """The relative path of every real folder below ``agent_dir``."""
    for folder, dirs, _ in os.walk(agent_dir):
        dirs.sort()
        for name in dirs:
            if not os.path.islink(os.path.join(folder, name)):
                yield os.path.relpath(os.path.join(folder, name), agent_dir)


def _sha256(agent_dir: str, path: str) -> str:
    """The file's sha256, or "" for anything but a regular file (a symlink is never followed)."""
    try:
        descriptor = os.open(
            os.path.join(agent_dir, path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        )
    except OSError:
        return ""
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return ""
        return hashlib.file_digest(handle, "sha256").hexdigest()


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
            paths += [blobs.path_for(digest) for digest in _blob_refs(record)]
    return sorted({os.path.relpath(path, report.agent_dir) for path in paths})


def write_marker(agent_dir: str, written: list[str], now: datetime = DEMO_NOW) -> None:
    """Record the files the demo wrote (relative paths) with their sha256 and the folders they
    are in, readable by the owner only; then give those folders the story's time."""
    files = {path: _sha256(agent_dir, path) for path in written}
    dirs = sorted(
        {
            os.path.join(*parts[:depth])
            for parts in (path.split("/") for path in written)
            for depth in range(1, len(parts))
        }
    )
    marker = {
        "note": "Made by `xcsh-store demo`. Running it again replaces these files (and the "
        "index) and nothing else; it refuses while the folder holds any other file.",
        "files": files,
        "dirs": dirs,
    }
    path = os.path.join(agent_dir, DEMO_MARKER)
    text = json.dumps(marker, indent=1, sort_keys=True).encode() + b"\n"
    write_atomically(FileSessionStorage(), path, [text])
    os.chmod(path, FILE_MODE)
    moment = now.timestamp()
    os.utime(path, (moment, moment))
    deepest_first = sorted(dirs, key=lambda name: name.count("/"), reverse=True)
    for folder in [*(os.path.join(agent_dir, name) for name in deepest_first), agent_dir]:
        os.utime(folder, (moment, moment))


def png_bytes(width: int, height: int, rng: random.Random) -> bytes:
    """A small noisy gradient PNG: big enough (noise does not compress) to be stored as a blob."""
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            row += bytes(
                (
                    (40 + x * 6 + rng.randrange(24)) % 256,
                    (60 + y * 5 + rng.randrange(24)) % 256,
                    (120 + rng.randrange(48)) % 256,
                )
            )
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class _Script:
    """Writes one session through SessionManager on a virtual clock.

    The manager takes the session id, the entry ids and the timestamps from the real clock and
    a random generator, as it does for an agent; ``finish`` gives the written file the story's
    times and ids drawn from ``ids`` (the same on every run) and moves it to the file name
    those make.
    """

    def __init__(
        self,
        agent_dir: str,
        cwd: str,
        start: datetime,
        model: str,
        rng: random.Random,
        ids: random.Random,
    ) -> None:
        self.agent_dir = agent_dir
        self.manager = SessionManager.create(cwd, agent_dir=agent_dir)
        self.start = self.clock = start
        self.model = model
        self.rng = rng
        self.ids = ids
        self.times: dict[str, datetime] = {}
        self.calls = 0
        self.context_tokens = rng.randrange(6000, 9000)
        self.stamp(self.manager.append_model_change(model))

    def stamp(self, entry_id: str) -> str:
        self.times[entry_id] = self.clock
        return entry_id

    def wait(self, low: float, high: float) -> None:
        self.clock += timedelta(seconds=self.rng.uniform(low, high))

    def thinking_level(self, level: str) -> str:
        return self.stamp(self.manager.append_thinking_level_change(level))

    def user(self, text: str, image: bytes | None = None) -> str:
        self.wait(25, 110)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image is not None:
            content.append(_image_block(image))
        message = {"role": "user", "content": content, "timestamp": _millis(self.clock)}
        return self.stamp(self.manager.append_message(message))

    def assistant(
        self,
        text: str | None = None,
        thinking: str | None = None,
        calls: tuple[tuple[str, dict[str, Any]], ...] = (),
    ) -> tuple[str, list[str]]:
        self.wait(5, 45)
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        call_ids = []
        for name, arguments in calls:
            self.calls += 1
            call_ids.append(f"call_{self.calls:03d}")
            content.append(
                {"type": "toolCall", "id": call_ids[-1], "name": name, "arguments": arguments}
            )
        provider, model = self.model.split("/")
        message = {
            "role": "assistant",
            "content": content,
            "api": APIS[provider],
            "provider": provider,
            "model": model,
            "usage": self._usage(len(text or "") + len(thinking or "")),
            "stopReason": "toolUse" if calls else "stop",
            "timestamp": _millis(self.clock),
        }
        return self.stamp(self.manager.append_message(message)), call_ids

    def _usage(self, written_chars: int) -> dict[str, Any]:
        fresh = self.rng.randrange(600, 3200)
        output = max(40, written_chars // 4) + self.rng.randrange(60, 700)
        cache_write = self.rng.randrange(400, 2800) if self.model.startswith("anthropic") else 0
        cache_read = self.context_tokens
        self.context_tokens += fresh + output + self.rng.randrange(500, 2500)
        prices = PRICES[self.model]
        parts = [
            count * price / 1_000_000
            for count, price in zip((fresh, output, cache_read, cache_write), prices, strict=True)
        ]
        return {
            "input": fresh,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "totalTokens": fresh + output + cache_read + cache_write,
            "cost": {
                "input": round(parts[0], 6),
                "output": round(parts[1], 6),
                "cacheRead": round(parts[2], 6),
                "cacheWrite": round(parts[3], 6),
                "total": round(sum(parts), 6),
            },
        }

    def tool(
        self, call_id: str, name: str, text: str, error: bool = False, image: bytes | None = None
    ) -> str:
        self.wait(1, 40)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image is not None:
            content.append(_image_block(image))
        message = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": content,
            "isError": error,
            "timestamp": _millis(self.clock),
        }
        return self.stamp(self.manager.append_message(message))

    def act(
        self,
        name: str,
        arguments: dict[str, Any],
        result: str,
        text: str | None = None,
        thinking: str | None = None,
        error: bool = False,
        image: bytes | None = None,
    ) -> str:
        """An assistant turn with one tool call and its result; returns the assistant entry."""
        entry_id, (call_id,) = self.assistant(text, thinking, ((name, arguments),))
        self.tool(call_id, name, result, error, image)
        return entry_id

    def artifact(self, content: str, tool_type: str) -> str:
        return self.manager.save_artifact(content, tool_type)

    def finish(self, title: str | None = None) -> str:
        manager = self.manager
        if title:
            manager.set_session_name(title, source="auto")
        manager.close()
        written = manager.get_session_file()
        assert written is not None
        records = read_jsonl_file(written)
        renamed = self._fixed_ids(records)
        header = records[0]
        header["id"] = snowflake_id(self.start, self.ids)
        header["timestamp"] = iso_millis(self.start)
        blobs = BlobStore(get_blobs_dir(self.agent_dir))
        for entry in records[1:]:
            moment = self.times.get(entry["id"], self.clock)
            entry["timestamp"] = iso_millis(moment)
            for key in ID_FIELDS:
                if entry.get(key) in renamed:
                    entry[key] = renamed[entry[key]]
            for digest in _blob_refs(entry):
                _set_mtime(blobs.path_for(digest), moment)
        path = os.path.join(
            os.path.dirname(written), session_file_name(header["timestamp"], header["id"])
        )
        write_atomically(FileSessionStorage(), path, (dumps_line(record) for record in records))
        os.unlink(written)
        if os.path.isdir(artifacts_dir_for(written)):
            os.rename(artifacts_dir_for(written), artifacts_dir_for(path))
            for name in os.listdir(artifacts_dir_for(path)):
                _set_mtime(os.path.join(artifacts_dir_for(path), name), self.clock)
        _set_mtime(path, self.clock)
        return path

    def _fixed_ids(self, records: list[dict[str, Any]]) -> dict[str, str]:
        """Old entry id -> a new one from ``ids``, unique in the session; the story's times move
        to the new ids."""
        renamed: dict[str, str] = {}
        for entry in records[1:]:
            new = f"{self.ids.getrandbits(32):08x}"
            while new in renamed.values():
                new = f"{self.ids.getrandbits(32):08x}"
            renamed[entry["id"]] = new
        self.times = {renamed[old]: moment for old, moment in self.times.items()}
        for entry in records[1:]:
            entry["id"] = renamed[entry["id"]]
        return renamed


# The fields of an entry that hold the id of another entry (compatibility: Session file format as
# in the reference).
ID_FIELDS = ("parentId", "targetId", "firstKeptEntryId", "fromId")


def snowflake_id(moment: datetime, ids: random.Random) -> str:
    """A session id as the agent makes it at ``moment`` (a Snowflake), the sequence from ``ids``."""
    millis = _millis(moment) - _SNOWFLAKE_EPOCH_MS
    return f"{(millis << 22) | ids.getrandbits(22):016x}"


def _blob_refs(value: Any) -> Iterator[str]:
    """The hash of every blob reference anywhere in ``value``."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _blob_refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _blob_refs(item)
    elif isinstance(value, str):
        digest = parse_blob_ref(value)
        if digest is not None:
            yield digest


def _set_mtime(path: str, moment: datetime) -> None:
    os.utime(path, (moment.timestamp(), moment.timestamp()))


def _image_block(data: bytes) -> dict[str, Any]:
    return {
        "type": "image",
        "data": base64.b64encode(data).decode("ascii"),
        "mimeType": "image/png",
    }


def _day(today: datetime, days_ago: int, hour: int, minute: int) -> datetime:
    return today - timedelta(days=days_ago) + timedelta(hours=hour, minutes=minute)


def build_demo(agent_dir: str, seed: int = DEFAULT_SEED, now: datetime = DEMO_NOW) -> DemoReport:
    """Write the sample agent dir into ``agent_dir`` (which should be empty; see
    :func:`prepare_demo_dir`). The story happens over the two weeks before ``now``; the same
    ``seed`` and ``now`` write the same files, byte for byte, with the same times."""
    agent_dir = os.path.abspath(agent_dir)
    now = now.astimezone(UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    rng = random.Random(seed)
    # Ids have their own generator so the story (and its token counts) does not depend on how
    # many ids were drawn.
    ids = random.Random(f"xcsh-store-demo-ids-{seed}")
    report = DemoReport(agent_dir)
    report.sessions["login"] = _flaky_login(agent_dir, _day(today, 12, 9, 14), rng, ids)
    report.sessions["darkmode"] = _dark_mode(agent_dir, _day(today, 9, 14, 2), rng, ids)
    report.sessions["orders"] = _slow_orders(agent_dir, _day(today, 6, 10, 31), rng, ids)
    report.sessions["bucket"] = _staging_bucket(agent_dir, _day(today, 4, 16, 20), rng, ids)
    for index, (cwd, days_ago, hour, question, answer, model) in enumerate(QUICK_QUESTIONS):
        script = _Script(agent_dir, cwd, _day(today, days_ago, hour, 5), model, rng, ids)
        script.user(question)
        script.assistant(answer)
        report.sessions[f"quick-{index}"] = script.finish()
    start = min(now - timedelta(minutes=14), today + timedelta(hours=23))
    report.sessions["ratelimit"], prompts = _rate_limit(agent_dir, start, rng, ids)
    report.history_prompts = _remember_prompts(agent_dir, prompts)
    report.legacy_file = _legacy_session(agent_dir, _day(today, 30, 11, 0), rng)
    report.orphan_blob = _orphan_blob(agent_dir, now, rng)
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


# --------------------------------------------------------------------------------------------
# The stories


def _flaky_login(agent_dir: str, start: datetime, rng: random.Random, ids: random.Random) -> str:
    s = _Script(agent_dir, WEBAPP, start, "anthropic/claude-sonnet-4-5", rng, ids)
    s.thinking_level("medium")
    s.user(
        "The login test in tests/e2e/test_login.py fails about one run in five on CI. "
        "Can you find out why and fix it?"
    )
    s.act(
        "read",
        {"path": "tests/e2e/test_login.py"},
        "def test_login(page, user):\n    page.goto('/login')\n"
        "    page.fill('#email', user.email)\n"
        "    page.fill('#password', user.password)\n    page.click('button[type=submit]')\n"
        "    page.goto('/dashboard')\n    expect(page.locator('#dashboard')).to_be_visible()\n",
        text="Let me read the test first.",
        thinking="A flaky end-to-end test usually means a race. Read the test, then run it in a "
        "loop to see the failure.",
    )
    runs = [
        f"tests/e2e/test_login.py::test_login[run{n:02d}] "
        + ("FAILED" if n in (3, 8, 14, 17) else "PASSED")
        for n in range(1, 21)
    ]
    failure = (
        "E   TimeoutError: Locator.to_be_visible: waiting for locator('#dashboard')\n"
        "E   Call log: navigated to '/dashboard', redirected to '/login?next=/dashboard'"
    )
    full = "\n".join(runs) + "\n\n" + "\n\n".join([failure] * 4) + "\n4 failed, 16 passed in 61.2s"
    artifact = s.artifact(full, "bash")
    s.act(
        "bash",
        {"command": "pytest tests/e2e/test_login.py --count 20 -p no:randomly"},
        "\n".join(runs[:6]) + f"\n…\n{failure}\n4 failed, 16 passed in 61.2s\n\n"
        f"[Full output: artifact://{artifact}]",
    )
    diagnosis, _ = s.assistant(
        "4 of 20 runs fail waiting for #dashboard: the test opens /dashboard before the login "
        "redirect has set the session cookie, so the app sends it back to /login. Two ways out: "
        "freeze the clock in the auth middleware, or wait for the session cookie before "
        "navigating. I'll try the clock first since it is the smaller change."
    )
    s.user("Try mocking the clock first.")
    s.act(
        "edit",
        {"path": "tests/e2e/conftest.py"},
        "Applied 1 edit to tests/e2e/conftest.py (+9 lines)",
        text="Adding a frozen_clock fixture that pins time for the auth middleware.",
    )
    s.act(
        "bash",
        {"command": "pytest tests/e2e/test_login.py --count 20"},
        "3 failed, 17 passed in 58.9s",
    )
    s.assistant(
        "Freezing the clock did not help: 3 of 20 runs still fail, so time is not the cause."
    )
    s.stamp(
        s.manager.branch_with_summary(
            diagnosis,
            "Tried freezing the clock with a frozen_clock fixture in tests/e2e/conftest.py: "
            "still 3/20 failures, so the race is not about time. Reverted the fixture.",
        )
    )
    s.user("OK, wait for the session cookie instead.")
    s.act(
        "edit",
        {"path": "tests/e2e/test_login.py"},
        "Applied 1 edit to tests/e2e/test_login.py (+3 -1 lines)",
        text="The test will wait until the `session` cookie exists before opening /dashboard.",
    )
    s.act(
        "bash",
        {"command": "pytest tests/e2e/test_login.py --count 50"},
        "50 passed in 148.3s",
    )
    fixed, _ = s.assistant(
        "Fixed: the test now waits for the session cookie after submitting the form, and 50 of "
        "50 runs pass. Suggested commit message: `test(e2e): wait for the session cookie before "
        "visiting /dashboard`."
    )
    s.stamp(s.manager.append_label_change(diagnosis, "diagnosis"))
    s.stamp(s.manager.append_label_change(fixed, "fixed"))
    return s.finish("Fix the flaky login test")


def _dark_mode(agent_dir: str, start: datetime, rng: random.Random, ids: random.Random) -> str:
    s = _Script(agent_dir, WEBAPP, start, "anthropic/claude-sonnet-4-5", rng, ids)
    s.user(
        "Here's a screenshot of the settings page. Add a dark mode toggle next to 'Language' "
        "and remember the choice.",
        image=png_bytes(48, 32, rng),
    )
    s.act(
        "read",
        {"path": "src/settings/SettingsPage.tsx"},
        'export function SettingsPage() {\n  return (\n    <Panel title="Settings">\n'
        "      <LanguageSelect />\n      <NotificationToggles />\n    </Panel>\n  );\n}\n",
        thinking="The screenshot shows a Panel with Language and Notifications rows. A ThemeToggle "
        "belongs right after LanguageSelect; persistence can use localStorage.",
        text="The settings panel is in SettingsPage.tsx.",
    )
    s.act(
        "edit",
        {"path": "src/settings/SettingsPage.tsx"},
        "Applied 2 edits to src/settings/SettingsPage.tsx (+14 -1 lines)",
        text="Adding a ThemeToggle after the language picker; the choice goes to localStorage.",
    )
    kept = s.user("Make it follow the system setting by default.")
    s.act(
        "edit",
        {"path": "src/theme/useTheme.ts"},
        "Created src/theme/useTheme.ts (31 lines)",
        text="useTheme reads prefers-color-scheme until the user picks a theme explicitly.",
    )
    s.stamp(
        s.manager.append_compaction(
            "## Goal\nA dark mode toggle on the settings page that follows the system setting "
            "until the user chooses.\n## Done\n- ThemeToggle next to the language picker in "
            "SettingsPage.tsx\n- useTheme hook: prefers-color-scheme by default, explicit choice "
            "in localStorage\n## Next\n- visual tests for both themes",
            "Dark mode toggle that follows the system theme",
            kept,
            48_210,
        )
    )
    s.user("Now add a screenshot test for both themes.")
    s.act(
        "bash",
        {"command": "npx playwright test tests/visual/theme.spec.ts --update-snapshots"},
        "Running 2 tests using 2 workers\n  ✓ theme › light (1.9s)\n  ✓ theme › dark (2.1s)\n"
        "2 passed (4.3s)",
        image=png_bytes(40, 28, rng),
    )
    s.assistant(
        "Added tests/visual/theme.spec.ts with a light and a dark snapshot of the settings page; "
        "both pass and the snapshots are in tests/visual/__snapshots__/."
    )
    return s.finish("Dark mode toggle")


_EXPLAIN = """\
Gather  (cost=1000.43..389213.55 rows=48 width=96) (actual time=2301.2..2379.8 rows=37 loops=1)
  Workers Planned: 2
  ->  Nested Loop  (cost=0.43..388208.75 rows=20 width=96)
        ->  Parallel Seq Scan on order_items oi  (cost=0.00..371204.00 rows=1708333 width=40)
              (actual time=0.03..2233.1 rows=1366667 loops=3)
              Filter: (order_id = ANY ('{...}'::bigint[]))
              Rows Removed by Filter: 1366630
        ->  Index Scan using products_pkey on products p  (cost=0.43..8.45 rows=1 width=56)
Planning Time: 0.412 ms
Execution Time: 2381.4 ms"""

_REVIEW = """{
  "verdict": "approve with changes",
  "findings": [
    {"severity": "high", "file": "migrations/0042_order_items_order_id_idx.sql",
     "note": "CREATE INDEX blocks writes to order_items; use CREATE INDEX CONCURRENTLY"},
    {"severity": "low", "file": "api/orders.py",
     "note": "the N+1 on products disappears with the join; drop the prefetch loop"}
  ]
}
"""


def _slow_orders(agent_dir: str, start: datetime, rng: random.Random, ids: random.Random) -> str:
    s = _Script(agent_dir, API, start, "openai/gpt-5", rng, ids)
    s.thinking_level("high")
    s.user("GET /orders takes 2-3 seconds in production. Find out why.")
    outputs = AgentOutputManager(s.manager.get_artifacts_dir)
    explore = outputs.allocate("Explore")
    s.act(
        "task",
        {"agent": "explore", "task": "Find how GET /orders builds its database query"},
        f"Explore finished: /orders loads orders, then order_items by order_id in one IN query, "
        f"then products one by one. Full report: agent://{explore}",
        text="I'll have an explore agent map the request path while I look at the query plan.",
    )
    _write_output(
        s.manager.get_artifacts_dir(),
        explore,
        "# How GET /orders queries the database\n\n1. `api/orders.py:list_orders` selects the "
        "page of orders.\n2. It loads `order_items` with `WHERE order_id = ANY(:ids)`.\n"
        "3. For each item it fetches the product (`products_pkey`), an N+1.\n\n"
        "No index on `order_items.order_id` was found in `migrations/`.\n",
    )
    artifact = s.artifact(_EXPLAIN, "bash")
    s.act(
        "bash",
        {"command": "psql $DATABASE_URL -c 'EXPLAIN ANALYZE <the /orders items query>'"},
        _EXPLAIN.splitlines()[0] + "\n…\nExecution Time: 2381.4 ms\n\n"
        f"[Full output: artifact://{artifact}]",
    )
    s.act(
        "edit",
        {"path": "migrations/0042_order_items_order_id_idx.sql"},
        "Created migrations/0042_order_items_order_id_idx.sql (3 lines)",
        text="The planner scans all 4.1M order_items rows because order_items.order_id has no "
        "index. Adding one.",
    )
    review = outputs.allocate("Review")
    s.act(
        "task",
        {"agent": "review", "task": "Review the migration and the /orders query change"},
        f"Review finished: approve with changes, 2 findings. agent://{review}",
    )
    _write_output(s.manager.get_artifacts_dir(), review, _REVIEW)
    s.assistant(
        "Found it: a sequential scan on order_items (Execution Time 2381 ms). With the new index "
        "the same query takes 12 ms. The reviewer asks to build the index CONCURRENTLY so "
        "writes are not blocked during the deploy; I changed the migration accordingly."
    )
    return s.finish("Why is GET /orders slow?")


def _write_output(artifacts_dir: str | None, output_id: str, text: str) -> None:
    """What the task tool does with a subagent's answer: ``<artifacts>/<id>.md``."""
    assert artifacts_dir is not None
    ensure_private_dir(artifacts_dir)
    path = os.path.join(artifacts_dir, f"{output_id}.md")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "w") as handle:
        handle.write(text)


def _staging_bucket(agent_dir: str, start: datetime, rng: random.Random, ids: random.Random) -> str:
    s = _Script(agent_dir, INFRA, start, "google/gemini-2.5-pro", rng, ids)
    s.user(
        "Plan a new staging bucket for uploads with versioning and a 30-day lifecycle rule for "
        "old versions."
    )
    s.act(
        "bash",
        {"command": "terraform plan -target=module.uploads_staging"},
        "Terraform will perform the following actions:\n"
        "  # module.uploads_staging.google_storage_bucket.this will be created\n"
        "  + versioning { enabled = true }\n"
        '  + lifecycle_rule { action { type = "Delete" } condition { days_since_noncurrent_time'
        " = 30 } }\nPlan: 2 to add, 0 to change, 0 to destroy.",
        text="Writing modules/uploads_staging and planning only that module.",
    )
    s.stamp(
        s.manager.append_custom_message_entry(
            "cost-estimate",
            "Estimated monthly cost of this plan: +$0.85 (storage, 40 GB).",
            True,
        )
    )
    s.assistant(
        "The plan adds the bucket with versioning and a rule deleting noncurrent versions "
        "after 30 days, plus the IAM binding for the uploader service account. Nothing else "
        "changes. Apply with `terraform apply -target=module.uploads_staging`."
    )
    return s.finish("Staging uploads bucket")


QUICK_QUESTIONS = (
    (
        WEBAPP,
        13,
        10,
        "What does the staleTime option in react-query actually change?",
        "staleTime is how long fetched data counts as fresh. While it is fresh, mounting a "
        "component or refocusing the window does not refetch; the default 0 refetches on "
        "every such event.",
        "anthropic/claude-sonnet-4-5",
    ),
    (
        API,
        11,
        15,
        "Write a regex that matches ISO 8601 dates with an optional time part.",
        r"`^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$` matches "
        "2026-03-01, 2026-03-01T09:30 and 2026-03-01T09:30:00.123Z.",
        "openai/gpt-5",
    ),
    (
        INFRA,
        10,
        11,
        "Why does terraform fmt -check fail on CI but pass on my laptop?",
        "CI runs Terraform 1.9 and your laptop 1.5; fmt rules changed in between (alignment "
        "of = in blocks). Pin the version in .terraform-version and run fmt with it.",
        "google/gemini-2.5-pro",
    ),
    (
        WEBAPP,
        8,
        17,
        "Rename usrCtx to userContext everywhere under src/.",
        "Renamed usrCtx to userContext in 14 files under src/; the type checker and the unit "
        "tests pass.",
        "anthropic/claude-sonnet-4-5",
    ),
    (
        API,
        7,
        9,
        "Explain this: psycopg.errors.DeadlockDetected while backfilling order totals.",
        "Two backfill workers update the same orders in different orders. Sort the ids and "
        "update in batches in that order, or run one worker: the deadlock goes away.",
        "openai/gpt-5",
    ),
    (
        WEBAPP,
        5,
        13,
        "Bump vite to 5.4 and fix the build warnings.",
        "vite is at 5.4.11; the two warnings were a deprecated `build.polyfillModulePreload` "
        "option and a CJS import of lodash, both fixed.",
        "anthropic/claude-sonnet-4-5",
    ),
    (
        API,
        2,
        16,
        "Add a --dry-run flag to scripts/backfill_orders.py.",
        "--dry-run now runs the queries inside a transaction that is rolled back and prints how "
        "many rows each batch would change.",
        "openai/gpt-5",
    ),
)


def _rate_limit(
    agent_dir: str, start: datetime, rng: random.Random, ids: random.Random
) -> tuple[str, list[tuple[str, str, datetime]]]:
    """Today's session; its prompts are also what history.db remembers."""
    s = _Script(agent_dir, API, start, "anthropic/claude-sonnet-4-5", rng, ids)
    prompts = [
        "Add rate limiting to POST /orders: 10 requests per minute per API key.",
        "Return a Retry-After header with the 429 too.",
    ]
    typed = [s.user(prompts[0])]
    s.act(
        "read",
        {"path": "api/middleware.py"},
        "class AuthMiddleware:\n    def __call__(self, request):\n        key = "
        "request.headers.get('X-Api-Key')\n        ...",
        text="Looking at the middleware stack first.",
    )
    s.act(
        "edit",
        {"path": "api/ratelimit.py"},
        "Created api/ratelimit.py (42 lines)",
        text="A sliding-window limiter in Redis keyed by API key, applied to POST /orders.",
    )
    typed.append(s.user(prompts[1]))
    s.act(
        "bash",
        {"command": "pytest tests/test_ratelimit.py -q"},
        "6 passed in 0.84s",
        text="Adding Retry-After (seconds until the window frees a slot) and a test for it.",
    )
    s.assistant(
        "POST /orders now allows 10 requests per minute per API key; the 11th gets a 429 with "
        "Retry-After. Tests cover the limit, the header and separate keys."
    )
    times = [s.times[entry_id] for entry_id in typed]
    return s.finish("Rate limit POST /orders"), [
        (prompt, API, moment) for prompt, moment in zip(prompts, times, strict=True)
    ]


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
    _set_mtime(path, prompts[-1][2])
    return len(prompts)


def _legacy_session(agent_dir: str, start: datetime, rng: random.Random) -> str:
    """A v1 file as an old pi wrote it: no version, no ids, no parent links."""
    session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    moments = [start + timedelta(seconds=offset) for offset in (0, 5, 40, 95, 130)]
    usage = {"input": 1420, "output": 380, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1800}
    records: list[dict[str, Any]] = [
        {
            "type": "session",
            "id": session_id,
            "timestamp": iso_millis(moments[0]),
            "cwd": SCRIPTS,
        }
    ]
    turns = [
        ("user", "Write a script that renames my photos by their EXIF date."),
        ("assistant", "Here is rename_photos.py: it reads DateTimeOriginal with Pillow and renames "
         "each file to YYYY-MM-DD_HHMMSS.jpg, adding -1, -2 on collisions."),
        ("user", "Skip files without EXIF data instead of failing."),
        ("assistant", "Done: files without DateTimeOriginal are now listed at the end as skipped."),
    ]  # fmt: skip
    for (role, text), moment in zip(turns, moments[1:], strict=True):
        message: dict[str, Any] = {
            "role": role,
            "content": [{"type": "text", "text": text}],
            "timestamp": _millis(moment),
        }
        if role == "assistant":
            message.update(provider="anthropic", model="claude-3-5-sonnet", usage=usage)
        records.append({"type": "message", "timestamp": iso_millis(moment), "message": message})
    folder = get_default_session_dir(SCRIPTS, agent_dir)
    path = os.path.join(folder, session_file_name(iso_millis(start), session_id))
    write_atomically(FileSessionStorage(), path, (dumps_line(record) for record in records))
    os.utime(path, (moments[-1].timestamp(), moments[-1].timestamp()))
    return path


def _orphan_blob(agent_dir: str, now: datetime, rng: random.Random) -> str:
    """An image pasted into a prompt that was never sent: a blob nothing references."""
    with SessionManager.in_memory(WEBAPP, agent_dir=agent_dir) as draft:
        stored = draft.put_blob(png_bytes(36, 24, rng))
    three_days_ago = (now - timedelta(days=3)).timestamp()
    os.utime(stored.path, (three_days_ago, three_days_ago))
    return stored.hash
