"""opencode (sst/opencode) sessions kept as a tree of small JSON files, the storage of releases
before 1.x: ``${XDG_DATA_HOME:-~/.local/share}/opencode/storage`` (``$OPENCODE_DATA_DIR/storage``
when set, ccusage's variable) holds

* ``session/<projectID>/<sessionID>.json``: ``{id, version, projectID, directory, parentID,
  title, time: {created, updated}}`` (times in milliseconds since the epoch; ``parentID`` names
  the session a child session, a subagent's, was started from);
* ``message/<sessionID>/<messageID>.json``: ``{id, sessionID, role, time: {created}}``; an
  assistant message adds ``modelID``, ``providerID``, ``cost`` (dollars, recorded by opencode),
  ``tokens {input, output, reasoning, cache: {read, write}}``, ``path``, ``finish``, ``error``;
* ``part/<messageID>/<partID>.json``: a message's pieces, ``type`` ``text``, ``reasoning``,
  ``tool`` (``callID``, ``tool``, ``state {status, input, output, error, time}``), ``file``,
  ``step-start``, ``step-finish``, ``patch``, ``snapshot``, ``compaction``... Older trees keep
  the parts flat, ``part/<partID>.json``, each naming its message (``messageID``): a message
  without a folder of parts has those (the flat folder is read once for all its sessions, and
  again only when it changed).

A tree agent (Agent.kind): below opencode's data folder (the one root), a session is its
session file; its identity sums the sizes and takes the newest times of every file of the
session (its messages and their parts), so a session is read again whole when any of them
changed. Its records, the locator their number in this order: 0 the session, then each
message (ordered by ``time.created``, then id: ids sort by time) with its parts (ordered by
file name, their id), each ``tool`` part after its message as a record of its own, the tool's
result. Entries have no ids of opencode's: they are a chain in that order (an assistant
message's ``parentID`` names the user message it answers, which is the message before it).

* Text parts are the message's text (``synthetic`` ones too: opencode wrote them into the
  conversation), ``reasoning`` its thinking, each ``tool`` part a tool call (``callID``,
  ``tool``, ``state.input``) and its result (``state.output``, or ``state.error`` when the
  status is ``error``), paired by the call id. ``file``, ``patch``, ``snapshot``,
  ``step-start``, ``step-finish``, ``agent``, ``subtask``, ``retry`` and ``compaction`` parts add
  no text.
* An assistant message marked ``summary`` is the summary a compaction asked for (after a user
  message with a ``compaction`` part): a ``compaction`` entry, its text the summary.
* A user message's ``summary {title, body}`` is what opencode wrote of the turn afterwards (a
  small model's title of the request and its account of what the assistant did:
  session/summary.ts), not the user's words: a user message without text parts is a
  ``turn_summary`` notice holding that summary, searchable and no prompt.
* An assistant message's model is its ``modelID`` and ``providerID`` (else those of its
  ``model``); a user message's ``model`` is the one asked for, not one that answered.
* Usage is each assistant message's ``tokens``: ``input``, ``output`` plus ``reasoning`` (billed
  as output), ``cache.read``, ``cache.write``; its cost is the ``cost`` opencode recorded (a
  message whose ``cost`` is not a number has none: the tokens are counted, the cost unknown).
* A child session's ``parentID`` is its parent session's id (a subagent link).
* opencode 1.x keeps the same sessions, messages and parts in SQLite (``opencode.db`` beside
  ``storage``): opencode_db.py reads them as the same records (a session ``<db>#<id>``).
* ``opencode export <sessionID>`` prints a session as one JSON document, the form in which
  sessions are shared: ``{info: <session>, messages: [{info: <message>, parts: [<part>]}]}``,
  the objects of the storage tree. A root that is not opencode's data folder (it holds no
  ``storage`` folder and no database) is a folder of such documents: each ``*.json`` below it
  is a session, read as the tree's are (a JSON file of another shape is reported, not read).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

from xcsh_store.agents.base import (
    Agent,
    AgentEntry,
    Record,
    SessionFacts,
    Source,
    number,
    text_blocks,
    text_of,
)
from xcsh_store.agents.opencode_db import (
    DATABASE_NAME,
    MESSAGE_RECORD,
    SESSION_RECORD,
    TOOL_RECORD,
    database_records,
    database_session,
    database_sources,
    session_database,
)
from xcsh_store.format.jsonl import read_document
from xcsh_store.homes import XDG_DATA_HOME_ENV, agent_home, folder_of
from xcsh_store.times import iso_from_millis

log = logging.getLogger("xcsh_store")


# ccusage's variable for opencode's data folder (opencode itself follows $XDG_DATA_HOME).
DATA_DIR_ENV = "OPENCODE_DATA_DIR"
# The custom type of a user message known only by opencode's summary of its turn.
TURN_SUMMARY = "turn_summary"


def opencode_dir() -> str:
    """``$OPENCODE_DATA_DIR``, else ``$XDG_DATA_HOME/opencode``, else
    ``~/.local/share/opencode`` (opencode's own, through xdg-basedir)."""
    return folder_of(DATA_DIR_ENV) or os.path.join(
        agent_home(XDG_DATA_HOME_ENV, ".local", "share"), "opencode"
    )


class OpencodeReader(Agent):
    name = "opencode"
    label = "opencode"
    kind = "tree"
    has_ids = False
    records_costs = True
    project_folders = False
    folder_variables = (DATA_DIR_ENV, XDG_DATA_HOME_ENV)
    resume = "opencode --session {id}"
    where = (
        "`$OPENCODE_DATA_DIR` (ccusage's variable), else `$XDG_DATA_HOME/opencode`, else"
        " `~/.local/share/opencode`: releases before 1.x `storage/session/<project>/<id>.json`,"
        " its messages in `storage/message/<id>/`, their parts in `storage/part/<message id>/`"
        " (older: flat in `storage/part/`); 1.x `opencode.db`; a root added as `opencode:DIR`"
        " that holds neither: `opencode export` documents, `*.json`"
    )

    def __init__(self) -> None:
        # The flat part folder of each storage tree read so far, indexed (_FlatParts).
        self._flat_parts: dict[str, _FlatParts] = {}

    def session_roots(self) -> list[str]:
        return [opencode_dir()]

    def kind_of(self, path: str) -> str:
        if database_session(path) is not None:
            return "sqlite"
        return "tree" if _in_storage(path) else "document"

    def sources(self, root: str) -> Iterator[Source]:
        """The session files below ``storage/session/<project>/``, then the sessions of each
        database (``opencode.db``, a release channel's ``opencode-<channel>.db``); in a folder
        that is neither, the export documents below it."""
        sessions = os.path.join(root, "storage", "session")
        databases = [name for name in _names(root) if DATABASE_NAME.fullmatch(name)]
        if not (databases or os.path.isdir(sessions) or _same_folder(root, opencode_dir())):
            yield from super().sources(root)
            return
        for project in _names(sessions):
            folder = os.path.join(sessions, project)
            for name in _names(folder):
                if self.is_session_name(name):
                    source = self._source(os.path.join(folder, name))
                    if source is not None:
                        yield source
        for name in databases:
            yield from database_sources(os.path.join(root, name))

    def is_session_name(self, name: str) -> bool:
        return name.endswith(".json") and not name.startswith(".")

    def records(self, path: str) -> Iterator[Record]:
        in_database = database_session(path)
        if in_database is not None:
            yield from database_records(*in_database)
        elif _in_storage(path):
            yield from self._tree_records(path)
        else:
            yield from _export_records(path)

    def _tree_records(self, path: str) -> Iterator[Record]:
        info = read_document(path)
        if type(info) is not dict:
            raise ValueError("an opencode session file is a JSON object")
        storage = _storage_of(path)
        messages = []
        for message_path in _message_files(storage, _session_id(path, info)):
            message = _load_or_skip(message_path)
            if type(message) is dict:
                parts = [
                    part
                    for part_path in self._part_files(storage, message_path, message)
                    if type(part := _load_or_skip(part_path)) is dict
                ]
                messages.append((_order(message, message_path), message, parts))
        messages.sort(key=itemgetter(0))
        yield from _session_records(info, [(message, parts) for _, message, parts in messages])

    def usage_records(self, path: str) -> Iterator[Record] | None:
        """The records of a storage tree's session that its usage comes from, in the order of
        :meth:`records`: the session and its messages without their parts (a message's tokens,
        cost and model are in its own file or row; its parts hold its text and tools). None
        for an export document (only :meth:`records` reads those). The locators of a tree's
        are not those of :meth:`records` (no tool records between messages)."""
        in_database = database_session(path)
        if in_database is not None:
            return database_records(*in_database, parts=False)
        if not _in_storage(path):
            return None
        return self._message_records(path)

    def _message_records(self, path: str) -> Iterator[Record]:
        info = read_document(path)
        if type(info) is not dict:
            raise ValueError("an opencode session file is a JSON object")
        messages = []
        for message_path in _message_files(_storage_of(path), _session_id(path, info)):
            message = _load_or_skip(message_path)
            if type(message) is dict:
                messages.append((_order(message, message_path), message))
        messages.sort(key=itemgetter(0))
        yield from _session_records(info, [(message, []) for _, message in messages])

    def _source(self, path: str) -> Source | None:
        """The session file's identity, with every file of its messages and their parts."""
        try:
            info = os.stat(path)
        except OSError:
            return None
        size, mtime, ctime, count = info.st_size, info.st_mtime_ns, info.st_ctime_ns, 1
        storage = _storage_of(path)
        for message_path in _message_files(storage, _session_id(path, None)):
            files = [message_path, *self._part_files(storage, message_path, None)]
            for file in files:
                try:
                    found = os.stat(file)
                except OSError:
                    continue
                size += found.st_size
                mtime, ctime = max(mtime, found.st_mtime_ns), max(ctime, found.st_ctime_ns)
                count += 1
        # The count too: a file removed and another grown by as many bytes change the sum
        # alike.
        return Source(path, size + count, mtime, info.st_ino, ctime)

    def _part_files(self, storage: str, message_path: str, message: Any) -> list[str]:
        """The message's part files, by name: in ``part/<messageID>/``, the folder named by the
        message's id, which is its file's name (else the id it holds: ``message``, read here
        when None); else those of the flat part folder that name the message."""
        stem = os.path.basename(message_path)[:-5]
        found = _json_files(os.path.join(storage, "part", stem))
        if found:
            return found
        if message is None:
            message = _load_or_skip(message_path)
        message_id = text_of(message.get("id")) if type(message) is dict else None
        if message_id is not None and message_id != stem and os.sep not in message_id:
            found = _json_files(os.path.join(storage, "part", message_id))
            if found:
                return found
        flat = self._flat_parts.get(storage)
        if flat is None:
            flat = self._flat_parts[storage] = _FlatParts(os.path.join(storage, "part"))
        return flat.of(message_id or stem)

    def session_files(self, path: str) -> list[str]:
        """The session's file, its messages' files and their parts' (a session of the
        database: none)."""
        if database_session(path) is not None or not os.path.isfile(path):
            return []
        storage = _storage_of(path)
        files = [path]
        for message_path in _message_files(storage, _session_id(path, None)):
            files += [message_path, *self._part_files(storage, message_path, None)]
        return files

    def session_members(self, path: str, root: str) -> list[tuple[str, bytes]]:
        """A session of the database: a database of its rows alone, named as the database is
        (opencode_db.session_database); else its files."""
        in_database = database_session(path)
        if in_database is None:
            return super().session_members(path, root)
        database, session_id = in_database
        return [(os.path.relpath(database, root), session_database(database, session_id))]

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        kind = value.get("type")
        if kind == SESSION_RECORD:
            return _session(value, session)
        if kind == TOOL_RECORD:
            return _tool_result(value.get("part") or {})
        return _message(value.get("info") or {}, value.get("parts") or [])


def _names(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _order(message: dict[str, Any], path: str) -> tuple[float, str]:
    """Messages in the order of ``time.created``, then of their files' names (their ids)."""
    created = _object(message.get("time")).get("created")
    if not isinstance(created, (int, float)) or isinstance(created, bool):
        created = 0.0
    return (created, os.path.basename(path))


def _object(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else."""
    return value if type(value) is dict else {}


def _storage_of(session_path: str) -> str:
    """``<storage>`` of ``<storage>/session/<project>/<id>.json``."""
    return os.path.dirname(os.path.dirname(os.path.dirname(session_path)))


def _in_storage(path: str) -> bool:
    """Whether ``path`` is a session file of a storage tree (else an export document)."""
    sessions = os.path.dirname(os.path.dirname(path))
    return (
        os.path.basename(sessions) == "session"
        and os.path.basename(os.path.dirname(sessions)) == "storage"
    )


def _same_folder(one: str, other: str) -> bool:
    return os.path.normpath(os.path.abspath(one)) == os.path.normpath(os.path.abspath(other))


class _FlatParts:
    """The part files that lie flat in a storage tree's ``part/`` folder, by the message each
    names (``messageID``): read once, and again only when the folder changed (a part added,
    removed or renamed into place changes its mtime; a part rewritten in place keeps its
    message)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.mtime_ns: int | None = None
        self.by_message: dict[str, list[str]] = {}

    def of(self, message_id: str) -> list[str]:
        try:
            mtime_ns = os.stat(self.folder).st_mtime_ns
        except OSError:
            return []
        if mtime_ns != self.mtime_ns:
            self.mtime_ns, self.by_message = mtime_ns, self._read()
        return self.by_message.get(message_id, [])

    def _read(self) -> dict[str, list[str]]:
        by_message: dict[str, list[str]] = {}
        for path in _json_files(self.folder):
            if os.path.isdir(path):
                continue
            part = _load_or_skip(path)
            owner = text_of(part.get("messageID")) if type(part) is dict else None
            if owner is not None:
                by_message.setdefault(owner, []).append(path)
        return by_message


def _session_records(
    info: dict[str, Any], messages: list[tuple[dict[str, Any], list[dict[str, Any]]]]
) -> Iterator[Record]:
    """A session's records, in order: its info, then each message with its parts, each
    ``tool`` part after its message as a record of its own (the locator their number)."""
    locator = 0
    yield 0, {"type": SESSION_RECORD, **info}
    for message, parts in messages:
        locator += 1
        yield locator, {"type": MESSAGE_RECORD, "info": message, "parts": parts}
        for part in parts:
            if part.get("type") == "tool":
                locator += 1
                yield locator, {"type": TOOL_RECORD, "part": part}


def _export_records(path: str) -> Iterator[Record]:
    """The records of an ``opencode export`` document, in its order."""
    document = read_document(path)
    info = document.get("info") if type(document) is dict else None
    messages = document.get("messages") if type(document) is dict else None
    if type(info) is not dict or type(messages) is not list:
        raise ValueError("not an opencode export document ({info, messages: [...]})")
    found = []
    for message in messages:
        if type(message) is dict and type(message.get("info")) is dict:
            parts = message.get("parts")
            parts = [part for part in parts if type(part) is dict] if type(parts) is list else []
            found.append((message["info"], parts))
    yield from _session_records(info, found)


def _session_id(path: str, info: dict[str, Any] | None) -> str:
    """The folder name of the session's messages: its file's name (opencode names the file by
    the id), else the id the file holds."""
    stem = os.path.basename(path)[:-5]
    if os.path.isdir(os.path.join(_storage_of(path), "message", stem)):
        return stem
    if info is None:
        info = _load_or_skip(path)
    found = text_of(info.get("id")) if type(info) is dict else None
    return found if found is not None and os.sep not in found else stem


def _message_files(storage: str, session_id: str) -> list[str]:
    """The session's message files, ordered by name (their ids, which sort by time)."""
    return _json_files(os.path.join(storage, "message", session_id))


def _json_files(folder: str) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        os.path.join(folder, name)
        for name in names
        if name.endswith(".json") and not name.startswith(".")
    ]


def _load_or_skip(path: str) -> Any:
    """A message's or a part's file, None (and a warning naming it) when it cannot be read: one
    bad file costs its own record, not the session."""
    try:
        return read_document(path)
    except (OSError, ValueError) as error:
        log.warning("%s: opencode file left out: %s", path, error)
        return None


def created_at(value: dict[str, Any]) -> str | None:
    """When a session or message was created (``time.created``), as ISO text."""
    times = value.get("time")
    return iso_from_millis(times.get("created")) if type(times) is dict else None


def _session(value: dict[str, Any], session: SessionFacts) -> AgentEntry:
    created = created_at(value)
    session.session_id = text_of(value.get("id")) or session.session_id
    session.cwd = text_of(value.get("directory"))
    session.created_at = created
    session.parent_session_id = text_of(value.get("parentID"))
    found = AgentEntry({"type": "session_meta", "timestamp": created})
    found.title = text_of(value.get("title"))
    found.title_source = "auto" if found.title else None
    return found


def _message(info: dict[str, Any], parts: list[dict[str, Any]]) -> AgentEntry:
    role = info.get("role")
    entry: dict[str, Any] = {"type": "message", "timestamp": created_at(info)}
    found = AgentEntry(entry)
    if role == "user":
        texts = [text for part in parts if (text := text_of(part.get("text"))) is not None]
        summary = _object(info.get("summary"))
        said = [text for key in ("title", "body") if (text := text_of(summary.get(key)))]
        if not texts and said:
            entry.update(type="custom_message", customType=TURN_SUMMARY, content=text_blocks(said))
            found.qualifier = TURN_SUMMARY
            return found
        entry["message"] = {"role": "user", "content": text_blocks(texts)}
        return found
    if role != "assistant":
        entry["type"] = "opencode-message"
        found.qualifier = text_of(role)
        return found
    content: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text" and (text := text_of(part.get("text"))) is not None:
            content.append({"type": "text", "text": text})
        elif kind == "reasoning" and (text := text_of(part.get("text"))) is not None:
            content.append({"type": "thinking", "thinking": text})
        elif kind == "tool":
            state = part.get("state")
            content.append(
                {"type": "toolCall", "id": text_of(part.get("callID")), "name": part.get("tool"),
                 "arguments": state.get("input") if type(state) is dict else None}
            )  # fmt: skip
    model, provider, usage = message_usage(info)
    if info.get("summary") is True:
        # The summary of the conversation so far that opencode's compaction asked for: what the
        # model sees from here on.
        texts = [block["text"] for block in content if block["type"] == "text"]
        entry.update(type="compaction", summary="\n".join(texts))
    else:
        entry["message"] = {"role": "assistant", "content": content, "model": model}
        if provider is not None:
            entry["message"]["provider"] = provider
    found.model, found.provider, found.usage = model, provider, usage
    return found


def message_usage(info: dict[str, Any]) -> tuple[str | None, str | None, tuple[Any, ...] | None]:
    """An assistant message's model, provider and usage (None: no ``tokens``)."""
    # Assistant messages name their model at the top; some writers only in ``model`` (as user
    # messages do).
    chosen = _object(info.get("model"))
    model = text_of(info.get("modelID")) or text_of(chosen.get("modelID"))
    provider = text_of(info.get("providerID")) or text_of(chosen.get("providerID"))
    tokens = info.get("tokens")
    if type(tokens) is not dict:
        return model, provider, None
    cache = _object(tokens.get("cache"))
    cost = info.get("cost")
    usage = (
        number(tokens.get("input")),
        number(tokens.get("output")) + number(tokens.get("reasoning")),
        number(cache.get("read")),
        number(cache.get("write")),
        0,
        cost if type(cost) in (int, float) else None,
    )
    return model, provider, usage


def _tool_result(part: dict[str, Any]) -> AgentEntry:
    state = _object(part.get("state"))
    failed = state.get("status") == "error"
    output = state.get("error") if failed else state.get("output")
    times = state.get("time")
    ended = iso_from_millis(times.get("end")) if type(times) is dict else None
    entry = {
        "type": "message",
        "timestamp": ended,
        "message": {
            "role": "toolResult",
            "toolCallId": text_of(part.get("callID")),
            "toolName": text_of(part.get("tool")),
            "isError": failed,
            "content": text_blocks([output] if isinstance(output, str) and output else []),
        },
    }
    return AgentEntry(entry)


READER = OpencodeReader()
