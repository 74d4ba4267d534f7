"""What an agent plugin gives the index: where the agent keeps its sessions, how to tell its
files, and each of its records as an entry of the xcsh entry model, with what the records say of
their session so far.

An agent is one module (``claude.py``, ``codex.py``, or a third party's), registered in the
entry point group ``xcsh_store.agents`` (registry.py). Its object is an :class:`AgentReader`;
:class:`Agent` gives the facts a reader need not state (no folders, no history file, JSON
lines) their defaults.

The kinds of session files (``Agent.kind``):

* ``jsonl`` (Claude Code, Codex and most others): the index reads the bytes (read-only) and
  hands the reader one parsed object at a time, in file order; an entry is read again by its
  line's byte offset.
  Its files are ``*.jsonl`` anywhere below a root, recognised by their first object.
* ``document`` (one JSON file per chat), ``tree`` (a session's small JSON files in folders),
  ``sqlite`` (sessions in a database), ``markdown`` (an appended chat log): the agent finds its
  sessions below a root itself (:meth:`Agent.sources`, each with the identity that tells a
  change) and opens them read-only (:meth:`Agent.records`), each record an object with a
  *locator*, a number the agent reads that record again by (a position in the document, a
  rowid, a byte offset); the index keeps it in the entry's ``offset``. Such a session is read
  again whole when it changed.

Either way the reader is handed each object once more, alone, when the index shows the text of
a hit. So an entry's searchable text depends on its record alone; only usage, titles and session
facts may use what earlier records said.
"""

from __future__ import annotations

import logging
import math
import operator
import os
import shlex
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, NamedTuple, Protocol

from xcsh_store.files import open_regular_file

# The kinds of session files a plugin reads (see the module docstring).
KINDS = ("jsonl", "document", "tree", "sqlite", "markdown")
# What a plugin's own fault may raise: any Exception, and SystemExit (a plugin that calls
# sys.exit as a script would). Either costs what the plugin was asked for, never the sync;
# KeyboardInterrupt is the user's, and stops it.
PLUGIN_FAULTS: tuple[type[BaseException], ...] = (Exception, SystemExit)

log = logging.getLogger("xcsh_store")


@dataclass(slots=True)
class SessionFacts:
    """What the lines read so far say of their session (a reader fills in what it learns)."""

    path: str
    session_id: str | None = None
    cwd: str | None = None
    created_at: str | None = None
    # The parent session's file (a Claude subagent's) and id (a subagent's, a fork's).
    parent_session: str | None = None
    parent_session_id: str | None = None
    # Codex: the second of the fork's creation; lines of that second are the parent's history
    # replayed into the fork (their usage was counted in the parent).
    replay_second: str | None = None
    # The model of the current turn (Codex names it in turn_context lines, not in responses).
    model: str | None = None
    # Formats whose records name no parent (Gemini CLI): the id of the entry the next record
    # continues from, and the parent of each entry with an id read so far (a resumed read of
    # a reader that ``remembers_parents`` gets both back from the index).
    leaf: str | None = None
    parents: dict[str, str | None] = field(default_factory=dict)

    def saved(self) -> tuple[Any, ...]:
        """Every fact as it is now, for restore()."""
        return _facts_of(self)

    def restore(self, saved: tuple[Any, ...]) -> None:
        """The facts as saved() found them (a record that fails is lost with what it said)."""
        for name, value in zip(_FACTS, saved, strict=True):
            setattr(self, name, value)

    def problem(self, saved: tuple[Any, ...] | None = None) -> str | None:
        """What a plugin set to another type than a fact takes, or None. With ``saved`` (what
        saved() gave when the facts were all of their types), only the facts changed since are
        looked at: a reader reading a line changes none, most of the time."""
        if saved is not None:
            now = _facts_of(self)
            if all(map(operator.is_, now, saved)):
                return None
            changed = [name for name, a, b in zip(_FACTS, now, saved, strict=True) if a is not b]
        else:
            changed = list(_FACTS)
        for name in changed:
            value = getattr(self, name)
            if name == "parents":
                if not isinstance(value, dict):
                    return f"session parents is {_shown(value)}, not a dict"
            elif name != "path" and value is not None and not isinstance(value, str):
                return f"session {name} is {_shown(value)}, not text"
        return None


_FACTS = tuple(fact.name for fact in fields(SessionFacts))
_facts_of = operator.attrgetter(*_FACTS)


class QuotaReading(NamedTuple):
    """One window of a plan's usage limit as the agent saw it on a line (Codex's
    ``rate_limits``): the percent of it used, its length and its end, when the agent says."""

    slot: str  # the agent's name of the window ('primary', 'secondary')
    used_percent: float
    window_minutes: int | None
    resets_at: str | None  # UTC ISO (canonical, as times.iso_millis writes)
    limit_id: str | None = None  # the agent's name of the limit ('codex')
    plan_type: str | None = None  # the account's plan ('plus', 'pro', 'free')


@dataclass(slots=True)
class AgentEntry:
    """One object of a line as the index stores it."""

    # In the xcsh entry model (format/entries.py): ``{"type": "message", "id", "parentId",
    # "timestamp", "message": {"role", "content", "model", "provider", "usage"}}``, or the
    # agent's own type for records that add no text (``progress``, ``file-history-snapshot``).
    entry: dict[str, Any]
    # Lines with the same key report one model response; the last one's usage counts.
    usage_key: str | None = None
    # A title the line gives its session (the last one wins), and who gave it.
    title: str | None = None
    title_source: str | None = None
    # (leaf entry id, summary): a summary of the conversation that ends at that entry, which
    # may be another file's (Claude Code's summary lines); it titles the session holding it.
    leaf_summary: tuple[str, str] | None = None
    # The model of a response (or of the turn a usage figure is of), and its provider.
    model: str | None = None
    provider: str | None = None
    # (input, output, cache read, cache write, premium requests, cost): what the line adds to
    # its session; the cost is an estimate, None for a model without a price.
    usage: tuple[Any, ...] | None = None
    # A rollback of the last this many user turns (Codex ``thread_rolled_back``): this entry
    # and those after it continue from where the first of those turns began, a new branch.
    rewind_turns: int | None = None
    # The agent's qualifier of the entry's type (a system line's subtype, ``sidechain``),
    # kept in the custom_type column.
    qualifier: str | None = None
    # A record without an id in a format that has ids (Copilot events some writers leave
    # without): it gets one in file order, the child of the entry before, as in a format
    # without ids (the id cannot be the reader's: a hit's text is read from its line alone).
    chained: bool = False
    # The plan's usage-limit windows the line reports (read at its timestamp), kept as quota
    # observations of the session.
    quotas: tuple[QuotaReading, ...] = ()


class PluginOutputError(TypeError):
    """A plugin gave a value of another type than the one its place takes (a usage figure as
    a string, an entry id as a number): the record (or session) is lost as if it raised."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _text_or_none(name: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return None
    return f"{name} is {_shown(value)}, not text"


def _figure(name: str, value: Any) -> str | None:
    """A token count or a cost: a finite int or float (a bool is not one)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return None
    return f"{name} is {_shown(value)}, not a number"


def entry_problem(found: Any) -> str | None:
    """What is wrong with what a plugin's read() gave, for the index to take it: None when it
    is an AgentEntry whose every field the index reads is of its type."""
    if not isinstance(found, AgentEntry):
        return f"read() gave {_shown(found)}, not an AgentEntry"
    entry = found.entry
    if not isinstance(entry, dict):
        return f"entry is {_shown(entry)}, not a dict"
    if not isinstance(entry.get("type"), str):
        return f"entry type is {_shown(entry.get('type'))}, not text"
    for key in ("id", "parentId", "timestamp"):
        value = entry.get(key)
        if value is not None and type(value) is not str:  # (the name only for a problem)
            problem = _text_or_none(f"entry {key}", value)
            if problem is not None:
                return problem
    if "message" in entry and not isinstance(entry["message"], dict):
        return f"entry message is {_shown(entry['message'])}, not a dict"
    for name in ("usage_key", "title", "title_source", "model", "provider", "qualifier"):
        value = getattr(found, name)
        if value is not None and type(value) is not str:
            problem = _text_or_none(name, value)
            if problem is not None:
                return problem
    summary = found.leaf_summary
    if summary is not None and not (
        isinstance(summary, tuple | list)
        and len(summary) == 2
        and all(isinstance(part, str) for part in summary)
    ):
        return f"leaf_summary is {_shown(summary)}, not (leaf id, summary)"
    if found.usage is not None:
        usage = found.usage
        if not isinstance(usage, tuple | list) or len(usage) != 6:
            return f"usage is {_shown(usage)}, not six figures"
        for number, value in enumerate(usage):
            if type(value) is int or (number == 5 and value is None):
                continue  # (the common case, with no name to make)
            problem = _figure(f"usage[{number}]", value)
            if problem is not None:
                return problem
    turns = found.rewind_turns
    if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 0):
        return f"rewind_turns is {_shown(turns)}, not a count"
    if not isinstance(found.chained, bool):
        return f"chained is {_shown(found.chained)}, not True or False"
    return _quotas_problem(found.quotas)


def _quotas_problem(quotas: Any) -> str | None:
    """What is wrong with a plugin's quota readings (None: a tuple of QuotaReading)."""
    if not isinstance(quotas, tuple | list):
        return f"quotas is {_shown(quotas)}, not a tuple of QuotaReading"
    for reading in quotas:
        if not isinstance(reading, QuotaReading):
            return f"quota reading {_shown(reading)} is not a QuotaReading"
        if not isinstance(reading.slot, str):
            return f"quota slot is {_shown(reading.slot)}, not text"
        problem = _figure("quota used_percent", reading.used_percent)
        minutes = reading.window_minutes
        if (
            problem is None
            and minutes is not None
            and (not isinstance(minutes, int) or isinstance(minutes, bool))
        ):
            problem = f"quota window_minutes is {_shown(minutes)}, not a count"
        for name in ("resets_at", "limit_id", "plan_type"):
            problem = problem or _text_or_none(f"quota {name}", getattr(reading, name))
        if problem is not None:
            return problem
    return None


def text_blocks(texts: Iterable[str]) -> list[dict[str, str]]:
    """Message content of the xcsh model: one ``text`` block per string."""
    return [{"type": "text", "text": text} for text in texts]


class AgentReader(Protocol):
    """One agent's format: what every plugin object has (a JSONL reader needs nothing more;
    :class:`Agent` says what the others add)."""

    # The sessions.agent value of its files.
    name: str
    # True when a record may name an entry written before it by id (Gemini's rewinds): a
    # resumed read then gets every entry's parent back in SessionFacts.parents.
    remembers_parents: bool
    # False when the format has no entry ids: entries then get deterministic ids in file
    # order, each the child of the entry before it (unless it names its parent).
    has_ids: bool

    def recognizes(self, value: dict[str, Any]) -> bool:
        """Whether the first object of a file is this agent's."""

    def session_roots(self) -> list[str]:
        """The folders where the agent keeps its session files on this machine (they need not
        exist), found as the agent finds them: its default and the variables that move it."""

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        """The object as an entry; updates ``session`` with what the object says of it."""

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        """A line of the agent's prompt history file (``history.jsonl``), None when it holds
        no prompt."""


class Source(NamedTuple):
    """One session of an agent whose sessions are not JSONL files: its path (a file, a folder,
    or ``<database>#<session id>``) and its identity, which changes whenever the session does
    (a file's size, mtime, inode and ctime; a folder's or a database's own figures)."""

    path: str
    size: int
    mtime_ns: int
    inode: int
    ctime_ns: int


# (locator, object): one record of a session, and the number it is read again by.
Record = tuple[int, dict[str, Any]]


class Agent:
    """The facts of an agent, with the defaults of one that states none: a plugin subclasses
    it and sets what differs. Every method is called on the plugin's one object."""

    name: ClassVar[str]
    # As people call it (help texts, docs).
    label: ClassVar[str] = ""
    kind: ClassVar[str] = "jsonl"
    has_ids: ClassVar[bool] = True
    # True when a record may name an entry written before it by id (Gemini's rewinds): a
    # resumed read then gets every entry's parent back in SessionFacts.parents.
    remembers_parents: ClassVar[bool] = False
    # The environment variables that move its folders (tests point them into a temp dir).
    folder_variables: ClassVar[tuple[str, ...]] = ()
    # Whether its files record their costs (else the index estimates them from the tokens:
    # agents/prices/pricing.py, and prices them again when the prices change).
    records_costs: ClassVar[bool] = False
    # Files tried in this order by recognizes() (lower first): a reader that takes the first
    # object of many formats for its own comes after the narrower ones.
    order: ClassVar[int] = 100
    # What a session file is, and where its agent keeps them (docs/agents.md).
    where: ClassVar[str] = ""
    # Whether the first folder below a session root names the session's project (Claude Code's
    # projects/<project>/, Gemini CLI's tmp/<project>/): its project_dir. False where those
    # folders are dates (Codex's sessions/YYYY/) or sessions (Copilot CLI's session-state/<id>/):
    # such sessions have no project folder (their project is their cwd, as every session's).
    project_folders: ClassVar[bool] = True
    # The command that resumes a session, ``{id}`` its id, run in its working folder ("": the
    # agent has none): resume_command() fills it in.
    resume: ClassVar[str] = ""
    # The revision of the reader: raised when a fix changes the rows it makes of the same
    # bytes, so that the index reads every session of the agent again on its next sync (from
    # the file, or from the store's archive when the file is gone). The index records the
    # revision that made each file's rows (files.reader_revision, migration 0016).
    revision: ClassVar[int] = 1

    def session_roots(self) -> list[str]:
        """The folders where the agent keeps its sessions on this machine (they need not
        exist), found as the agent itself finds them."""
        return []

    def history_files(self) -> list[str]:
        """The agent's prompt history files (JSON lines, read by history_prompt)."""
        return []

    def recognizes(self, value: dict[str, Any]) -> bool:
        """Whether the first object of a JSONL file is this agent's (other kinds: never)."""
        return False

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        """The record as an entry; updates ``session`` with what the record says of it. Every
        plugin says its own (the registry leaves out one that does not)."""
        raise NotImplementedError(f"agent plugin {self.name} reads no record")

    def history_prompt(self, value: dict[str, Any]) -> HistoryPrompt | None:
        return None

    def sources(self, root: str) -> Iterator[Source]:
        """The sessions below ``root`` (kinds other than jsonl): by default every file below it
        named as :meth:`is_session_name` says, with its stat as identity."""
        for folder, _folders, names in os.walk(root):
            for name in sorted(names):
                if self.is_session_name(name):
                    path = os.path.join(folder, name)
                    try:
                        info = os.stat(path)
                    except OSError:
                        continue
                    if stat.S_ISREG(info.st_mode):
                        yield Source(
                            path, info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns
                        )

    def is_session_name(self, name: str) -> bool:
        return False

    # True when a JSONL agent keeps some sessions as files of another kind too (Gemini CLI's
    # older whole-document chats): a sync then lists those through sources() beside the JSONL
    # files below the same root, and kind_of() tells each path's kind.
    other_kind_sources: ClassVar[bool] = False

    def kind_of(self, path: str) -> str:
        """The kind of the session at ``path`` (the agent's kind, unless it keeps two)."""
        return self.kind

    def records(self, path: str) -> Iterator[Record]:
        """Every record of the session at ``path``, in order, opened read-only (kinds other
        than jsonl)."""
        return iter(())

    def records_of_copy(self, path: str, copy: str) -> Iterator[Record]:
        """The records of the session at ``path`` read from ``copy``, a copy of it made from
        the store's archive (laid out below a stand-in of its root): by default the copy's
        records. A reader that takes facts from the session's path (Aider: its id and folder)
        reads the copy's bytes as those of ``path``."""
        return self.records(copy)

    def session_files(self, path: str) -> list[str]:
        """The files whose bytes make up the session at ``path`` (kinds other than jsonl),
        which the store's archive keeps whole and ``restore`` writes back: the file itself by
        default; none for a session kept in a database."""
        return [path] if os.path.isfile(path) else []

    def session_members(self, path: str, root: str) -> list[tuple[str, bytes]]:
        """(name below ``root``, bytes) of each part of the session at ``path`` (kinds other
        than jsonl): what the store's archive keeps whole, laid out below a copy of the root
        it reads the session from once it is gone. By default the bytes of its
        :meth:`session_files`; a session kept in a database gives a database of its own rows,
        named as the database is."""
        members = []
        for file in self.session_files(path):
            with open_regular_file(file) as stream:
                members.append((os.path.relpath(file, root), stream.read()))
        return members

    def resume_command(self, session_id: str, cwd: str | None) -> str | None:
        """The command that resumes a session of this agent in its working folder (``restore``
        prints it once the session's file is back): :attr:`resume` filled in, None when the
        agent has none."""
        if not self.resume:
            return None
        return ResumeCommand.filled(self.resume, session_id, cwd).shell()

    def records_at(self, path: str, locators: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The records of ``locators`` (those the session still holds), read again: by default
        the session is read again and those are kept."""
        wanted = set(locators)
        return {locator: value for locator, value in self.records(path) if locator in wanted}


@dataclass(frozen=True, slots=True)
class ResumeCommand:
    """An agent's own command that continues a session: its arguments, run in the session's
    working folder (``xcsh-store resume``, ``restore``)."""

    argv: tuple[str, ...]
    cwd: str | None

    @classmethod
    def filled(
        cls, template: str, session_id: str, cwd: str | None, path: str = ""
    ) -> ResumeCommand:
        """``template`` (``claude --resume {id}``) with the session's id and file path in
        place, each one argument whatever characters it holds."""
        parts = shlex.split(template)
        return cls(tuple(part.format(id=session_id, path=path) for part in parts), cwd or None)

    def shell(self) -> str:
        """The command as a shell line: ``cd FOLDER && agent …``, every part quoted."""
        command = shlex.join(self.argv)
        return f"cd {shlex.quote(self.cwd)} && {command}" if self.cwd else command


@dataclass(frozen=True, slots=True)
class HistoryPrompt:
    prompt: str
    created_at: float  # seconds since the epoch
    cwd: str | None
    session_id: str | None


# The qualifier (custom_type) of the record that named a format version its reader does not
# know, followed by that version.
UNKNOWN_VERSION_PREFIX = "unknown-version:"


def unknown_version(found: AgentEntry, path: str, agent: str, version: Any) -> None:
    """The record names a format version the reader does not know: it is kept as an entry
    without text, qualified by the version, and a warning names the file and the version. The
    file's other records are read as far as they look like known ones (a record's text may
    depend on its own line only: a hit's text is read again from that line alone)."""
    shown = str(version)
    found.qualifier = UNKNOWN_VERSION_PREFIX + shown
    log.warning(
        "%s: %s format version %s is unknown to this xcsh-store; its records are read as far"
        " as they look like those of known versions (upgrade xcsh-store to read them all)",
        path, agent, shown,
    )  # fmt: skip


def record_entry(
    value: dict[str, Any], kind: str | None, id_key: str = "id", parent_key: str = "parentId"
) -> dict[str, Any]:
    """An entry of the record's type (``unknown`` without one), with its id and parent where
    it has an id, and its ``timestamp``."""
    entry: dict[str, Any] = {"type": kind or "unknown"}
    entry_id = text_of(value.get(id_key))
    if entry_id is not None:
        entry.update(id=entry_id, parentId=text_of(value.get(parent_key)))
    timestamp = text_of(value.get("timestamp"))
    if timestamp is not None:
        entry["timestamp"] = timestamp
    return entry


def unknown_entry(value: dict[str, Any], kind: str | None, id_key: str = "id") -> AgentEntry:
    """A record of a format version the reader does not know: its id, parent and time if it
    has them where the known versions have them, and its own type."""
    entry = record_entry(value, kind, id_key)
    return AgentEntry(entry, qualifier="unknown", chained="id" not in entry)


def folder_from(variable: str, default: str) -> str:
    """The folder ``$variable`` names (``~`` expanded, made absolute), else ``default``."""
    value = os.environ.get(variable)
    return os.path.abspath(os.path.expanduser(value)) if value else os.path.expanduser(default)


def text_of(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def number(value: Any) -> int:
    """A token count (0 when missing or not a number; a bool is not one)."""
    return value if type(value) in (int, float) else 0


def content_texts(content: Any) -> list[str]:
    """The strings of Anthropic-style content: a string, or its ``text`` blocks (and strings)."""
    if isinstance(content, str):
        return [content] if content else []
    if type(content) is not list:
        return []
    texts = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif type(block) is dict and block.get("type") == "text":
            text = text_of(block.get("text"))
            if text is not None:
                texts.append(text)
    return texts


def anthropic_message(role: Any, content: Any) -> dict[str, Any] | None:
    """A message of Anthropic-style content blocks (``text``, ``thinking``, ``tool_use``,
    ``tool_result``) in the xcsh model: a user turn made only of tool results is a
    ``toolResult`` message (paired with its call by ``toolCallId``); None for another role."""
    blocks = content if type(content) is list else [content]
    if role == "user":
        results = [
            block for block in blocks if type(block) is dict and block.get("type") == "tool_result"
        ]
        if results and len(results) == len(blocks):
            texts = [text for block in results for text in content_texts(block.get("content"))]
            return {
                "role": "toolResult",
                "toolCallId": text_of(results[0].get("tool_use_id")),
                "isError": results[0].get("is_error") is True,
                "content": text_blocks(texts),
            }
        return {"role": "user", "content": text_blocks(content_texts(content))}
    if role != "assistant":
        return None
    found: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, str) and block:
            found.append({"type": "text", "text": block})
        elif type(block) is dict:
            kind = block.get("type")
            if kind in ("text", "thinking") and isinstance(block.get(kind), str):
                found.append({"type": kind, kind: block[kind]})
            elif kind == "tool_use":
                found.append(
                    {"type": "toolCall", "id": text_of(block.get("id")), "name": block.get("name"),
                     "arguments": block.get("input")}
                )  # fmt: skip
    return {"role": "assistant", "content": found}
