"""A tool call as what it did, whichever agent made it: one view per kind of tool, chosen by the
call's name and arguments. An edit is the line diff of what it changed (Claude Code's Edit,
MultiEdit and Write, Codex's apply_patch, however it was called, Gemini's replace and
write_file, opencode's, pi's and Copilot's edit, write and create), a shell run its command with
its description, a read its path and line range; any other call keeps its arguments. A diff's
removed and added lines are paired and their changed characters marked.

Exports (transcript.py), the web's session page and ``show`` all show a call through here, each
in its own medium (Markdown, HTML, a terminal).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

# Names of the tools that edit, run a shell command or read a file, in lower case (every
# agent's: Claude Code, Codex, Gemini CLI, opencode, pi and oh-my-pi, Copilot, Droid, Qwen).
EDIT_TOOLS = frozenset(
    {"edit", "multiedit", "write", "replace", "write_file", "create", "apply_patch",
     "edit_file", "str_replace", "str_replace_editor", "str_replace_based_edit_tool"}
)  # fmt: skip
SHELL_TOOLS = frozenset(
    {"bash", "shell", "exec_command", "shell_command", "run_shell_command", "execute",
     "run_terminal_cmd", "local_shell"}
)  # fmt: skip
READ_TOOLS = frozenset({"read", "read_file", "view", "readfile"})
# The keys that hold what a call works on: a command, a file's path, its old and new text,
# a new file's content; and those of a read's range (first line, then a count or last line).
_COMMAND_KEYS = ("command", "cmd")
_PATH_KEYS = ("file_path", "path", "filePath", "absolute_path")
_OLD_KEYS = ("old_string", "oldString", "old_str", "oldText")
_NEW_KEYS = ("new_string", "newString", "new_str", "newText")
_CONTENT_KEYS = ("content", "file_text")
_RANGE_KEYS = (("offset", "limit"), ("start_line", "end_line"), ("line", "limit"))
# Codex's patch language (apply_patch): given as the tool's input, in a shell heredoc, or as a
# string of the script its exec tool runs.
_PATCH = re.compile(r"\*\*\* Begin Patch\n.*?\*\*\* End Patch", re.DOTALL)
_QUOTED_PATCH = re.compile(r'"\*\*\* Begin Patch(?:[^"\\]|\\.)*"', re.DOTALL)
_PATCH_FILE = re.compile(r"\*\*\* (Add|Update|Delete) File: (.+)")
_WORDS = re.compile(r"\w+|\s+|[^\w\s]")
_EXEC_COMMAND = re.compile(r"tools\.exec_command\((\{.*\})\)", re.DOTALL)
# Edits whose old and new lines pair up more ways than this are not compared line by line
# (difflib takes time in proportion to it, and a session's page is read at most in seconds).
DIFFED_LINE_PAIRS = 1_000_000
# A diff longer than this many lines is folded (a Write of a whole file is all additions).
FOLDED_DIFF_LINES = 40
# Lines of more words than this, or past a diff's first MARKED_WORD_PAIRS (the product of a
# pair's word counts, summed), are not marked within: comparing two lines word by word takes
# time up to that product (and a session's page is read in seconds, whatever it holds).
MARKED_WORDS = 120
MARKED_WORD_PAIRS = 30_000
# A removed and an added line whose characters are less alike than this are two different
# lines: marking nearly every character of them says nothing.
MARKED_LIKENESS = 0.4
# Exit statuses as shells and agents write them in a command's output.
_EXIT = re.compile(
    r"^(?:Exit code:?|Process exited with code|exit code:?|Exit status:?) (-?\d+)"
    r'|"exit_code":\s*(-?\d+)',  # Codex 0.58's {"output": …, "metadata": {"exit_code": 0}}
    re.MULTILINE,
)


@dataclass
class ToolView:
    """What a call did: ``kind`` is diff, command, read or call; ``text`` the diff, the command,
    the path with its range or the arguments as JSON; ``title`` the tool's name with the file
    it edits or the command's description."""

    kind: str
    text: str
    title: str

    @property
    def gist(self) -> str:
        """The view on one line: ``Edit src/app.py +3 −1``, ``$ ls (List files)``,
        ``Read a.py (lines 3–9)``."""
        if self.kind == "diff":
            return f"{self.title} {diff_size(self.text, short=True)}"
        if self.kind == "command":
            described = self.title.partition(": ")[2]
            return f"$ {self.text}" + (f" ({described})" if described else "")
        return f"{self.title} {self.text}"


def tool_view(name: str, arguments: Any) -> ToolView:
    """The view of a call of the tool ``name`` with ``arguments``: by its name where it is a
    known edit, shell or read tool, else by the form of its arguments (an old and a new text,
    a command, a path), so that a tool of an agent not listed reads alike; any other call as
    its arguments, in JSON."""
    view = _done(name, arguments)
    if view is not None:
        return view
    try:
        shown = orjson.dumps(arguments, option=orjson.OPT_INDENT_2).decode() if arguments else ""
    except TypeError:  # what JSON holds but orjson does not (an integer past 64 bits)
        shown = str(arguments)
    return ToolView("call", shown, name)


def tool_gist(name: str, arguments: Any) -> str:
    """A call on one line (ToolView.gist); any other call as ``name(its first argument)``."""
    view = _done(name, arguments)
    if view is not None:
        return view.gist
    shown = ""
    if isinstance(arguments, dict) and arguments:
        key, value = next(iter(arguments.items()))
        shown = f"{key}={value}" if not isinstance(value, (dict, list)) else key
    return f"{name}({shown[:80]})"


def _done(name: str, arguments: Any) -> ToolView | None:
    """The view of an edit, a shell command or a read; None for any other call."""
    lowered = name.lower()
    if isinstance(arguments, dict):
        path = _string(_first(arguments, _PATH_KEYS))
        patch = _patch_of(arguments)
        if patch is not None:
            files = [match.group(2) for match in _PATCH_FILE.finditer(patch)]
            named = ", ".join(files[:3]) + (f" +{len(files) - 3} more" if len(files) > 3 else "")
            return ToolView("diff", patch_diff(patch), f"apply_patch {named}".strip())
        diff = edit_diff(arguments)
        if diff is not None:
            return ToolView("diff", diff, f"{name} {path}".strip())
        command = _first(arguments, _COMMAND_KEYS) or _script_command(arguments.get("input"))
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            command = _shell_words(command)
        if isinstance(command, str) and lowered not in EDIT_TOOLS:
            described = _string(arguments.get("description"))
            return ToolView("command", command, f"{name}: {described}" if described else name)
        readable = lowered in READ_TOOLS or (lowered not in EDIT_TOOLS and len(arguments) <= 3)
        if path and readable:
            return ToolView("read", path + read_range(arguments), name)
    return None


def _patch_of(arguments: dict[str, Any]) -> str | None:
    """The apply_patch patch a call's arguments hold: its input, a command running
    ``apply_patch <<'EOF'``, or a string literal of a script (Codex's exec tool)."""
    for value in (arguments.get("input"), arguments.get("patch"), *_commands(arguments)):
        if not isinstance(value, str) or "*** Begin Patch" not in value:
            continue
        quoted = _QUOTED_PATCH.search(value)
        if quoted is not None:
            try:
                return str(orjson.loads(quoted.group(0)))
            except orjson.JSONDecodeError:
                pass
        found = _PATCH.search(value)
        if found is not None:
            return found.group(0)
    return None


def _script_command(script: Any) -> str | None:
    """The command a script of Codex's exec tool runs through ``tools.exec_command({"cmd":
    …})``, when that is all it does (its output shown)."""
    if not isinstance(script, str) or script.count("tools.") != 1:
        return None
    found = _EXEC_COMMAND.search(script)
    if found is None:
        return None
    try:
        given = orjson.loads(found.group(1))
    except orjson.JSONDecodeError:
        return None
    command = given.get("cmd") if isinstance(given, dict) else None
    return command if isinstance(command, str) else None


def _commands(arguments: dict[str, Any]) -> list[str]:
    command = _first(arguments, _COMMAND_KEYS)
    if isinstance(command, list):
        return [part for part in command if isinstance(part, str)]
    return [command] if isinstance(command, str) else []


def patch_diff(patch: str) -> str:
    """Codex's patch language as a unified diff: each file's header (``*** Add File: a`` as
    ``--- /dev/null`` ``+++ a``), its hunks under ``@@`` as they are (their lines are already
    `` ``, ``-`` and ``+``)."""
    lines: list[str] = []
    for line in patch.splitlines():
        header = _PATCH_FILE.fullmatch(line)
        if header is not None:
            action, path = header.groups()
            old = "/dev/null" if action == "Add" else path
            new = "/dev/null" if action == "Delete" else path
            lines += [f"--- {old}", f"+++ {new}"]
            if action == "Add":
                lines.append("@@ new file @@")
        elif line.startswith("*** Move to: "):
            lines.append(f"+++ {line.removeprefix('*** Move to: ')}")
        elif line.startswith("@@"):
            lines.append(line if line.strip() != "@@" else "@@ @@")
        elif line.startswith(("*** Begin Patch", "*** End Patch", "*** End of File")):
            continue
        else:
            lines.append(line)
    return "".join(line + "\n" for line in lines)


def edit_diff(arguments: dict[str, Any]) -> str | None:
    """The unified diff of an edit's arguments: an old and a new text (Claude's Edit, Gemini's
    replace, opencode's, pi's and Copilot's edit), a list of them (MultiEdit, pi's edits), a
    whole file's content (a Write: every line added); None for arguments that are no edit."""
    path = _string(_first(arguments, _PATH_KEYS)) or "file"
    pairs: list[tuple[str, str]] = []
    edits = arguments.get("edits")
    if isinstance(edits, list):
        pairs = [_old_new(edit) for edit in edits if isinstance(edit, dict)]
        pairs = [pair for pair in pairs if pair != ("", "")]
    elif _old_new(arguments) != ("", ""):
        pairs = [_old_new(arguments)]
    elif isinstance(_first(arguments, _CONTENT_KEYS), str) and _first(arguments, _PATH_KEYS):
        pairs = [("", _first(arguments, _CONTENT_KEYS))]
    if not pairs:
        return None
    return "".join(line_diff(old, new, path) for old, new in pairs)


def line_diff(old: str, new: str, path: str) -> str:
    """The unified diff of ``old`` to ``new`` (a file's lines), headed by ``path``; past
    DIFFED_LINE_PAIRS, every old line removed and every new one added (one hunk)."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if len(old_lines) * len(new_lines) > DIFFED_LINE_PAIRS:
        span = f"@@ -{_span(len(old_lines))} +{_span(len(new_lines))} @@\n"
        changed = [f"-{line}" for line in old_lines] + [f"+{line}" for line in new_lines]
        lines: Iterable[str] = [f"--- {path}\n", f"+++ {path}\n", span, *changed]
    else:
        lines = difflib.unified_diff(old_lines, new_lines, path, path)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _span(count: int) -> str:
    """A hunk's range of ``count`` lines from the first (``1,12``; ``0,0`` for none)."""
    return f"1,{count}" if count else "0,0"


def diff_size(diff: str, short: bool = False) -> str:
    """``Diff: +12 −3 lines``, or ``+12 −3`` when ``short``: what a unified diff adds and
    removes."""
    lines = diff.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return f"+{added} −{removed}" if short else f"Diff: +{added} −{removed} lines"


def read_range(arguments: dict[str, Any]) -> str:
    """`` (lines 3–9)`` or `` (from line 3)``: the lines a read asks for; empty for all."""
    for start_key, end_key in _RANGE_KEYS:
        start, end = arguments.get(start_key), arguments.get(end_key)
        if isinstance(start, int) and isinstance(end, int):
            last = end if end_key == "end_line" else start + end - 1
            return f" (lines {start}–{last})"
        if isinstance(start, int):
            return f" (from line {start})"
        if isinstance(end, int) and end_key == "limit":
            return f" (lines 1–{end})"
    return ""


def exit_status(output: str) -> int | None:
    """The exit status a shell command's output states (``Exit code: 2``, Codex's ``Process
    exited with code 2``), None where it states none."""
    found = _EXIT.search(output[:2000]) or _EXIT.search(output[-2000:])
    return None if found is None else int(found.group(1) or found.group(2))


# --------------------------------------------------------------------------------------------
# A diff's lines, their changed characters marked


@dataclass
class DiffLine:
    """One line of a unified diff: ``kind`` is file (a ``---``/``+++`` header), hunk (``@@``),
    add, del or same; ``pieces`` its text as (changed, text) runs, the changed characters of
    an added or removed line paired with one of the other side."""

    kind: str
    pieces: list[tuple[bool, str]]

    @property
    def text(self) -> str:
        return "".join(text for _changed, text in self.pieces)


def marked_lines(diff: str) -> list[DiffLine]:
    """The lines of ``diff``, each run of removed lines followed by added ones paired line by
    line and the characters that differ within each pair marked (as git's diff-highlight)."""
    lines = [DiffLine(_line_kind(line), [(False, line)]) for line in diff.splitlines()]
    budget = MARKED_WORD_PAIRS
    start = 0
    while start < len(lines):
        if lines[start].kind != "del":
            start += 1
            continue
        removed_end = start
        while removed_end < len(lines) and lines[removed_end].kind == "del":
            removed_end += 1
        added_end = removed_end
        while added_end < len(lines) and lines[added_end].kind == "add":
            added_end += 1
        for old, new in zip(lines[start:removed_end], lines[removed_end:added_end], strict=False):
            old_words, new_words = _words(old.text), _words(new.text)
            cost = len(old_words) * len(new_words)
            if budget >= cost and max(len(old_words), len(new_words)) <= MARKED_WORDS:
                budget -= cost
                old.pieces, new.pieces = _marked_pair(old.text, new.text, old_words, new_words)
        start = added_end
    return lines


def _line_kind(line: str) -> str:
    if line.startswith(("--- ", "+++ ")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "same")


def _words(line: str) -> list[str]:
    """A diff line's words after its ``-`` or ``+`` (a word, a run of spaces, a sign), at most
    one past MARKED_WORDS."""
    words = []
    for found in _WORDS.finditer(line, 1):
        words.append(found.group(0))
        if len(words) > MARKED_WORDS:
            break
    return words


def _marked_pair(
    old: str, new: str, old_words: list[str], new_words: list[str]
) -> tuple[list[tuple[bool, str]], list[tuple[bool, str]]]:
    """The pieces of a removed line and of the added line it became (each with its ``-`` or
    ``+`` first, unmarked), compared by their ``words``: marks that a reader can take in, not
    single letters that happen to match."""
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    if matcher.ratio() < MARKED_LIKENESS:
        return [(False, old)], [(False, new)]
    old_pieces: list[tuple[bool, str]] = [(False, old[0])]
    new_pieces: list[tuple[bool, str]] = [(False, new[0])]
    for operation, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        changed = operation != "equal"
        if old_end > old_start:
            old_pieces.append((changed, "".join(old_words[old_start:old_end])))
        if new_end > new_start:
            new_pieces.append((changed, "".join(new_words[new_start:new_end])))
    return _joined(old_pieces), _joined(new_pieces)


def _joined(pieces: list[tuple[bool, str]]) -> list[tuple[bool, str]]:
    """Neighbouring pieces of the same marking as one."""
    joined: list[tuple[bool, str]] = []
    for changed, text in pieces:
        if joined and joined[-1][0] == changed:
            joined[-1] = (changed, joined[-1][1] + text)
        else:
            joined.append((changed, text))
    return joined


# --------------------------------------------------------------------------------------------


def _old_new(value: dict[str, Any]) -> tuple[str, str]:
    old, new = _first(value, _OLD_KEYS), _first(value, _NEW_KEYS)
    if isinstance(old, str) and isinstance(new, str):
        return old, new
    return "", ""


def _shell_words(words: list[str]) -> str:
    """A command given as its words (Codex's ``["bash", "-lc", "ls"]``): the script a shell
    runs, else the words joined."""
    if (
        len(words) == 3
        and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
        and (words[1] in ("-lc", "-c"))
    ):
        return words[2]
    return " ".join(words)


def _first(value: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((value[key] for key in keys if value.get(key) is not None), None)


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""
