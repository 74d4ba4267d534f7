"""A third-party agent plugin, as a package outside xcsh-store would write it: four made-up
agents, one of each kind of session files that is not JSON lines, each found below the folder
its variable names. tests/test_agent_plugins.py installs it as a distribution of its own (an
entry point in the group ``xcsh_store.agents``) and runs the CLI over it.

* ``docchat`` (document): ``<root>/<name>.chat.json``, one JSON document per chat:
  ``{"id", "title", "cwd", "created", "messages": [{"role", "text", "time", "model",
  "usage": {"input", "output", "cost"}}]}``; it records its costs.
* ``treechat`` (tree): ``<root>/<session>/session.json`` (``{"id", "cwd", "created"}``) and
  ``<root>/<session>/messages/<n>.json`` (a message each).
* ``sqlchat`` (sqlite): ``<root>/chats.db``, tables ``sessions (id, cwd, title, created)`` and
  ``messages (session_id, role, text, time, model, input, output)``, a session per row of
  sessions (``chats.db#<id>``), opened read-only.
* ``mdchat`` (markdown): ``<root>/<name>.chat.md``, appended blocks: ``#### <prompt>`` is the
  user's, the paragraphs after it the assistant's.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from typing import Any

from xcsh_store.agents import Agent, AgentEntry, Record, SessionFacts, Source


def _message(value: dict[str, Any], session: SessionFacts) -> AgentEntry:
    """A ``{"role", "text", "time", "model"?, "input"?, "output"?, "cost"?}`` record."""
    role = value["role"]
    entry = {
        "type": "message",
        "timestamp": value.get("time"),
        "message": {"role": role, "content": [{"type": "text", "text": value["text"]}]},
    }
    found = AgentEntry(entry)
    if role == "assistant":
        found.model, found.provider = value.get("model"), "anthropic"
        if "input" in value:
            found.usage = (value["input"], value["output"], 0, 0, 0, value.get("cost"))
    return found


def _session(value: dict[str, Any], session: SessionFacts) -> AgentEntry:
    session.session_id = value["id"]
    session.cwd = value.get("cwd")
    session.created_at = value.get("created")
    found = AgentEntry({"type": "session_meta", "timestamp": value.get("created")})
    found.title = value.get("title")
    found.title_source = "auto" if found.title else None
    return found


class _Chat(Agent):
    """What the four share: no entry ids, a folder named by their one variable, the records."""

    has_ids = False

    def session_roots(self) -> list[str]:
        folder = os.environ.get(self.folder_variables[0])
        return [folder] if folder else []

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        if value.get("kind") == "session":
            return _session(value, session)
        return _message(value, session)


class DocChat(_Chat):
    name = "docchat"
    label = "DocChat"
    kind = "document"
    records_costs = True
    folder_variables = ("DOCCHAT_DIR",)

    def is_session_name(self, name: str) -> bool:
        return name.endswith(".chat.json")

    def records(self, path: str) -> Iterator[Record]:
        with open(path, "rb") as handle:
            chat = json.load(handle)
        meta = {key: chat.get(key) for key in ("id", "title", "cwd", "created")}
        yield 0, {"kind": "session", **meta}
        for number, message in enumerate(chat["messages"], 1):
            usage = message.get("usage") or {}
            yield number, {
                "role": message["role"],
                "text": message["text"],
                "time": message.get("time"),
                "model": message.get("model"),
                **({"input": usage["input"], "output": usage["output"], "cost": usage["cost"]}
                   if usage else {}),
            }  # fmt: skip


class TreeChat(_Chat):
    name = "treechat"
    label = "TreeChat"
    kind = "tree"
    folder_variables = ("TREECHAT_DIR",)

    def sources(self, root: str) -> Iterator[Source]:
        for name in sorted(os.listdir(root)):
            folder = os.path.join(root, name)
            if not os.path.isfile(os.path.join(folder, "session.json")):
                continue
            files = [os.path.join(folder, "session.json")]
            messages = os.path.join(folder, "messages")
            if os.path.isdir(messages):
                files += [os.path.join(messages, item) for item in os.listdir(messages)]
            stats = [os.stat(path) for path in files]
            yield Source(
                folder,
                sum(item.st_size for item in stats) + len(stats),
                max(item.st_mtime_ns for item in stats),
                os.stat(folder).st_ino,
                max(item.st_ctime_ns for item in stats),
            )

    def records(self, path: str) -> Iterator[Record]:
        with open(os.path.join(path, "session.json"), "rb") as handle:
            yield 0, {"kind": "session", **json.load(handle)}
        messages = os.path.join(path, "messages")
        numbers = sorted(int(name.removesuffix(".json")) for name in os.listdir(messages))
        for number in numbers:
            with open(os.path.join(messages, f"{number}.json"), "rb") as handle:
                yield number, json.load(handle)


class SqlChat(_Chat):
    name = "sqlchat"
    label = "SqlChat"
    kind = "sqlite"
    folder_variables = ("SQLCHAT_DIR",)

    def _open(self, database: str) -> sqlite3.Connection:
        # Read-only, and each question one short statement: the agent writing it never waits.
        if not os.path.isfile(database):
            raise FileNotFoundError(database)
        return sqlite3.connect(f"file:{database}?mode=ro", uri=True)

    def sources(self, root: str) -> Iterator[Source]:
        database = os.path.join(root, "chats.db")
        if not os.path.isfile(database):
            return
        inode = os.stat(database).st_ino
        with self._open(database) as connection:
            rows = connection.execute(
                "SELECT s.id, count(m.rowid), coalesce(max(m.rowid), 0) FROM sessions AS s"
                " LEFT JOIN messages AS m ON m.session_id = s.id GROUP BY s.id ORDER BY s.id"
            ).fetchall()
        for session_id, count, last in rows:
            yield Source(f"{database}#{session_id}", count, last, inode, 0)

    def records(self, path: str) -> Iterator[Record]:
        yield from self._records(path, None)

    def records_at(self, path: str, locators: Any) -> dict[int, dict[str, Any]]:
        return dict(self._records(path, set(locators)))

    def _records(self, path: str, wanted: set[int] | None) -> Iterator[Record]:
        database, _, session_id = path.rpartition("#")
        with self._open(database) as connection:
            found = connection.execute(
                "SELECT id, title, cwd, created FROM sessions WHERE id = ?", (session_id,)
            ).fetchall()
            if not found:
                raise FileNotFoundError(path)
            rows = connection.execute(
                "SELECT rowid, role, text, time, model, input, output FROM messages"
                " WHERE session_id = ? ORDER BY rowid",
                (session_id,),
            ).fetchall()
        if wanted is None or 0 in wanted:
            keys = ("id", "title", "cwd", "created")
            yield 0, {"kind": "session", **dict(zip(keys, found[0], strict=True))}
        for rowid, role, text, time, model, tokens_in, tokens_out in rows:
            if wanted is not None and rowid not in wanted:
                continue
            value = {"role": role, "text": text, "time": time, "model": model}
            if tokens_in is not None:
                value.update(input=tokens_in, output=tokens_out, cost=None)
            yield rowid, value


class MdChat(_Chat):
    name = "mdchat"
    label = "MdChat"
    kind = "markdown"
    folder_variables = ("MDCHAT_DIR",)

    def is_session_name(self, name: str) -> bool:
        return name.endswith(".chat.md")

    def records(self, path: str) -> Iterator[Record]:
        with open(path, "rb") as handle:
            data = handle.read()
        name = os.path.basename(path).removesuffix(".chat.md")
        yield 0, {"kind": "session", "id": name, "title": None, "cwd": None, "created": None}
        offset = 0
        for block in data.split(b"\n\n"):
            text = block.decode().strip()
            if text.startswith("#### "):
                yield offset + 1, {"role": "user", "text": text[5:]}
            elif text:
                yield offset + 1, {"role": "assistant", "text": text}
            offset += len(block) + 2


DOCCHAT = DocChat()
TREECHAT = TreeChat()
SQLCHAT = SqlChat()
MDCHAT = MdChat()


class PlainLines:
    """A JSONL reader of the AgentReader protocol alone (no Agent base, no facts): lines
    ``{"plain": true, "role", "text"}``, found in the roots added as ``plainlines:DIR``."""

    name = "plainlines"
    has_ids = False

    def recognizes(self, value: dict[str, Any]) -> bool:
        return value.get("plain") is True

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        return _message({"role": value.get("role"), "text": value.get("text")}, session)

    def history_prompt(self, value: dict[str, Any]) -> None:
        return None


PLAINLINES = PlainLines()


class FaultyLines(PlainLines):
    """A reader with a bug: it fails on every line that says ``boom``, and on first lines
    without ``faulty`` (so on every other agent's files)."""

    name = "faultylines"

    def recognizes(self, value: dict[str, Any]) -> bool:
        return value["faulty"] is True

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        if "boom" in value["text"]:
            raise KeyError("boom")
        return super().read(value, session)


FAULTYLINES = FaultyLines()


class WrongLines(PlainLines):
    """A reader with bugs that raise nothing: a line's ``wrong`` says what it gets wrong (a
    usage figure as a string, an entry id as a number, a time as a list, a title as a dict,
    the session's id as a number)."""

    name = "wronglines"

    def recognizes(self, value: dict[str, Any]) -> bool:
        return "wrong" in value

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        found = super().read(value, session)
        wrong = value["wrong"]
        if wrong == "usage":
            found.usage = ("lots", 5, 0, 0, 0, None)
        elif wrong in ("id", "timestamp"):
            found.entry[wrong] = 7 if wrong == "id" else ["yesterday"]
        elif wrong == "title":
            found.title = {"title": "a dict"}
        elif wrong == "session":
            session.session_id = 42  # type: ignore[assignment]
        return found


WRONGLINES = WrongLines()


class ExitingLines(PlainLines):
    """A reader that calls ``sys.exit(3)`` on lines that say ``exit`` (as a script's code
    would, pasted into a plugin)."""

    name = "exitinglines"

    def recognizes(self, value: dict[str, Any]) -> bool:
        return value.get("exiting") is True

    def read(self, value: dict[str, Any], session: SessionFacts) -> AgentEntry:
        if "exit" in value["text"]:
            sys.exit(3)
        return super().read(value, session)


EXITINGLINES = ExitingLines()


class ExitingDocs(DocChat):
    """DocChat whose records() calls ``sys.exit(3)``, in the folder ``$EXITINGDOC_DIR``."""

    name = "exitingdoc"
    folder_variables = ("EXITINGDOC_DIR",)

    def records(self, path: str) -> Iterator[Record]:
        sys.exit(3)


EXITINGDOC = ExitingDocs()


class ExitingAtLoad:
    """A plugin class whose making calls ``sys.exit(3)`` (the registry makes a class into its
    object when it loads it)."""

    def __init__(self) -> None:
        sys.exit(3)
