"""Aider's chat history: appended Markdown in each repository's root,
``.aider.chat.history.md`` (``--chat-history-file`` / ``$AIDER_CHAT_HISTORY_FILE`` name
another). It has no ids and no machine-readable records:

* each run opens with ``# aider chat started at YYYY-MM-DD HH:MM:SS`` (local time, no zone:
  read as UTC, the one time it records); each run is a session of its own,
  ``<file>#<byte offset of its first line>``, the repository (the file's folder) its cwd;
* ``#### `` lines are what the user typed (a multi-line prompt is several of them);
* ``> `` lines are Aider's own output (the command line, ``Model:`` / ``Main model: <model>
  with … edit format``, ``Applied edit to …``, ``Commit …``): a ``tool-output`` entry, and
  searchable; ``> Tokens: 9.8k sent, 141 received. Cost: $0.01 message, $0.03 session.`` is
  the usage of the reply before it, rounded as Aider prints it, with the cost it recorded
  (missing for a model without a price);
* every other line is the assistant's reply (Markdown, SEARCH/REPLACE blocks).

A markdown agent (Agent.kind): the file is read as a whole, but a run is read again only when
its bytes changed (Aider only appends, so that is the last run). A record's locator is the byte
offset of its first line in the file. Lines end in two spaces (Markdown line breaks): stripped.

Aider keeps no list of its repositories: its sessions are found below the roots a user adds
(``sync --add-root aider:DIR``, down to :data:`MAX_DEPTH` folders below it), in files named
``.aider.chat.history.md`` or as ``$AIDER_CHAT_HISTORY_FILE`` names them. It has no folder of
its own to look in: the folder of ``$AIDER_CHAT_HISTORY_FILE`` may be $HOME, and a root there
would hold every other agent's.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from typing import Any

from xcsh_store.agents.base import Agent, AgentEntry, Record, SessionFacts, Source, text_blocks
from xcsh_store.files import open_regular_file

HISTORY_FILE_ENV = "AIDER_CHAT_HISTORY_FILE"
HISTORY_NAME = ".aider.chat.history.md"
# How far below a root a repository's history is looked for (a monorepo's packages).
MAX_DEPTH = 3
# Folders no repository root is in.
_SKIPPED = frozenset({"node_modules", "__pycache__", "venv"})
_RUN = re.compile(rb"^# aider chat started at (\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)", re.MULTILINE)
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)")
_TOKENS = re.compile(
    r"^Tokens: ([\d.]+)([kM]?) sent, ([\d.]+)([kM]?) received\."
    r"(?: Cost: \$([\d.]+) message)?"
)
_SCALE = {"": 1, "k": 1_000, "M": 1_000_000}


class AiderReader(Agent):
    name = "aider"
    label = "Aider"
    kind = "markdown"
    has_ids = False
    records_costs = True
    resume = "aider --restore-chat-history"
    where = (
        "`.aider.chat.history.md` in a repository's root (or as `$AIDER_CHAT_HISTORY_FILE` names"
        " it), below the roots added with `sync --add-root aider:DIR` (three folders deep: Aider"
        " keeps no list of its repositories): appended Markdown, each run"
        " (`# aider chat started at …`) a session"
    )

    def is_session_name(self, name: str) -> bool:
        named = os.environ.get(HISTORY_FILE_ENV)
        return name == HISTORY_NAME or (bool(named) and name == os.path.basename(named or ""))

    def sources(self, root: str) -> Iterator[Source]:
        below = root.rstrip(os.sep).count(os.sep)
        for folder, folders, _names in os.walk(root):
            depth = folder.rstrip(os.sep).count(os.sep) - below
            folders[:] = [] if depth >= MAX_DEPTH else sorted(
                name for name in folders if not name.startswith(".") and name not in _SKIPPED
            )  # fmt: skip
            for name in sorted(_names):
                if not self.is_session_name(name):
                    continue
                path = os.path.join(folder, name)
                try:
                    with open_regular_file(path) as stream:
                        data = stream.read()
                        inode = os.fstat(stream.fileno()).st_ino
                except OSError:
                    continue
                for start, end in _runs(data):
                    # Its bytes' hash: a run changes only when appended to (the last one). Not
                    # its trailing blank lines: the next run begins with one (in the run before).
                    run = data[start:end].rstrip()
                    digest = int.from_bytes(hashlib.sha1(run).digest()[:7], "big")
                    yield Source(f"{path}#{start}", len(run), digest, inode, 0)

    def records(self, path: str) -> Iterator[Record]:
        return _records(path, path)

    def records_of_copy(self, path: str, copy: str) -> Iterator[Record]:
        """The run's records read from the copy, its id and folder those of ``path``."""
        return _records(path, copy)

    def session_members(self, path: str, root: str) -> list[tuple[str, bytes]]:
        """The run alone, at its offset in the log: blank lines before it (a copy made of it
        reads as the run did, every byte offset the same; blank lines cost the archive next
        to nothing), named as the log is."""
        file, start = _split(path)
        with open_regular_file(file) as stream:
            data = stream.read()
        end = dict(_runs(data)).get(start)
        if end is None:
            raise FileNotFoundError(path)
        return [(os.path.relpath(file, root), b"\n" * start + data[start:end])]

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        kind = value.get("kind")
        timestamp = value.get("time")
        if kind == "run":
            session.session_id = value["id"]
            session.cwd = value.get("cwd")
            session.created_at = timestamp
            return AgentEntry({"type": "session_meta", "timestamp": timestamp})
        text = value.get("text") or ""
        entry: dict[str, Any] = {"type": "message", "timestamp": timestamp}
        found = AgentEntry(entry)
        if kind == "user":
            entry["message"] = {"role": "user", "content": text_blocks([text])}
        elif kind == "assistant":
            entry["message"] = {"role": "assistant", "content": text_blocks([text])}
            found.model, found.provider = _model(value.get("model"))
        else:
            entry.update(type="custom_message", customType="tool-output")
            entry["content"] = text_blocks([text])
            found.qualifier = "tool-output"
            usage = value.get("usage")
            if usage is not None:
                found.model, found.provider = _model(value.get("model"))
                found.usage = (usage[0], usage[1], 0, 0, 0, usage[2])
        return found


def _records(path: str, read_from: str) -> Iterator[Record]:
    """The records of the run ``path`` names, read from the log ``read_from`` names (the
    log itself, or a copy made from the archive): its id and folder are ``path``'s."""
    file, start = _split(path)
    with open_regular_file(_split(read_from)[0]) as stream:
        data = stream.read()
    for run_start, end in _runs(data):
        if run_start == start:
            yield from _run_records(file, data, start, end)
            return
    raise FileNotFoundError(path)


def _split(path: str) -> tuple[str, int]:
    file, _, start = path.rpartition("#")
    if not start.isdigit():
        raise FileNotFoundError(path)
    return file, int(start)


def _runs(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each run; bytes before the first run (none, in a file Aider wrote)
    belong to none."""
    starts = [match.start() for match in _RUN.finditer(data)]
    return list(zip(starts, [*starts[1:], len(data)], strict=True))


def _model(name: Any) -> tuple[str | None, str | None]:
    """``provider/model`` as Aider names it (LiteLLM's), else the model alone."""
    if not isinstance(name, str):
        return None, None
    provider, _, model = name.partition("/")
    return (model, provider) if model else (name, None)


def _run_records(file: str, data: bytes, start: int, end: int) -> Iterator[Record]:
    """The records of the run at ``data[start:end]``: the run itself, then each block of
    consecutive lines of one kind (user, output, reply) and each ``Tokens:`` line alone."""
    match = _RUN.match(data, start)
    assert match is not None
    time = f"{match.group(1).decode()}T{match.group(2).decode()}.000Z"
    folder = os.path.dirname(file)
    digest = hashlib.sha1(file.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    run_id = f"aider-{digest}-{match.group(1).decode()}T{match.group(2).decode()}"
    yield start, {"kind": "run", "id": run_id, "cwd": folder, "time": time}
    model = None
    block: tuple[int, str, list[str]] | None = None
    offset = start + len(data[start:end].split(b"\n", 1)[0]) + 1
    for raw in data[offset:end].splitlines(keepends=True):
        line = raw.decode("utf-8", "replace").rstrip("\r\n").removesuffix("  ")
        here, offset = offset, offset + len(raw)
        if line.startswith("####"):
            kind, text = "user", line[5:]
        elif line.startswith(">"):
            kind, text = "output", line[2:]
            found = _MODEL.match(text)
            model = found.group(1) if found else model
            tokens = _TOKENS.match(text)
            if tokens is not None:
                if block is not None:
                    yield _record(block, model, time)
                    block = None
                yield here, {
                    "kind": "output", "text": text, "model": model, "time": time,
                    "usage": _usage(tokens),
                }  # fmt: skip
                continue
        else:
            kind, text = "assistant", line
        if block is not None and (block[1] == kind or not line.strip()):
            block[2].append(text)
            continue
        if block is not None:
            yield _record(block, model, time)
        block = (here, kind, [text]) if line.strip() else None
    if block is not None:
        yield _record(block, model, time)


def _record(block: tuple[int, str, list[str]], model: str | None, time: str) -> Record:
    offset, kind, lines = block
    return offset, {"kind": kind, "text": "\n".join(lines).strip(), "model": model, "time": time}


def _usage(tokens: re.Match[str]) -> tuple[int, int, float | None]:
    sent = round(float(tokens.group(1)) * _SCALE[tokens.group(2)])
    received = round(float(tokens.group(3)) * _SCALE[tokens.group(4)])
    cost = float(tokens.group(5)) if tokens.group(5) is not None else None
    return sent, received, cost


READER = AiderReader()
