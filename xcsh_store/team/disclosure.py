"""What leaves the machine: the rows ``push`` and ``export parquet`` send, made from the local
index's rows for a privacy tier, and the host's key that keeps what must stay home unguessable.

Tiers (``TIERS``; docs/security.md has the table, column by column): below ``full`` no entry
text, raw JSON, prompt history, prompt hash or blob digest leaves (a digest of a text or an
image confirms a guess of it); below ``meta`` no title or first message either. At every tier
the watermark of a file (what the index said of it when it was sent: its size, digests of its
first and last bytes, when it was read) leaves only as a MAC under the host key (keyed BLAKE2b,
which does the work of an HMAC in one call), so the server can tell that a file changed and
nothing else: a digest of the file would let anyone holding the rows confirm a guessed prompt,
and its size would tell how long it was.

Secrets in the text that leaves (titles, first messages, entry text and raw JSON, prompts) are
replaced by ``[REDACTED:<kind>]`` (xcsh_store.secrets) unless the caller asks for the text as it
is (``redact``); the watermark of a file whose text left says which, so a push that redacts
sends again what one that did not had sent. At the usage tier no text leaves: redacting or
not, the watermark is the same.

``redact_paths`` sends a label instead of every absolute path (cwd, project folder, session
file, history cwd): ``project-`` and 12 hex digits of the directory's MAC, the same for one
directory on every push, and unlinkable to it without the key.

The host key is 32 random bytes in ``team-key`` beside index.db (0600). It never leaves the
machine; losing it costs one full push (every watermark differs) and new labels.
"""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

from xcsh_store.index import (
    ENTRY_COLUMNS,
    HISTORY_COLUMNS,
    SESSION_COLUMNS,
    USAGE_COLUMNS,
    EntryRow,
)
from xcsh_store.paths import write_private_file
from xcsh_store.secrets import Redactor

TIERS = ("usage", "meta", "full")
KEY_FILE_NAME = "team-key"
# The session columns only the meta tier and above carry.
META_COLUMNS = ("title", "first_message", "compaction_title")
# Entry columns that say something of a prompt's text (a hash can be matched against guesses):
# the full tier's, which sends the text itself (and needs them: prompt recall links history
# prompts to their entries by hash).
TEXT_HASH_COLUMNS = ("prompt_hash",)
# Columns holding an absolute directory, and those holding a session file's path.
DIRECTORY_COLUMNS = ("cwd", "project_dir")
FILE_COLUMNS = ("parent_session",)
LABEL_PREFIX = "project-"
# Folded into the keyed watermark of a file whose text left redacted (the redaction's version):
# a file sent before redaction existed, or with --no-redact, differs and is sent again.
REDACTED_MARK = "redacted1"

_META = [SESSION_COLUMNS.index(column) for column in META_COLUMNS]
_TEXT_HASH = [ENTRY_COLUMNS.index(column) for column in TEXT_HASH_COLUMNS]
_SESSION_DIRECTORIES = [SESSION_COLUMNS.index(column) for column in DIRECTORY_COLUMNS]
_SESSION_FILES = [SESSION_COLUMNS.index(column) for column in FILE_COLUMNS]
_USAGE_DIRECTORIES = [USAGE_COLUMNS.index(column) for column in DIRECTORY_COLUMNS]
_HISTORY_PROMPT = HISTORY_COLUMNS.index("prompt")
_HISTORY_CWD = HISTORY_COLUMNS.index("cwd")


def host_key(folder: str) -> bytes:
    """The host key kept in ``folder`` (beside index.db), made on first use. Two processes
    making it at once agree on one: the key is linked into place only if none is there."""
    path = os.path.join(folder, KEY_FILE_NAME)
    try:
        with open(path, "rb") as handle:
            text = handle.read().strip()
        return bytes.fromhex(text.decode("ascii"))
    except FileNotFoundError:
        pass
    except (UnicodeDecodeError, ValueError):
        os.replace(path, f"{path}.unreadable")  # kept for its owner; a new key is made
    temporary = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    write_private_file(temporary, secrets.token_hex(32).encode("ascii") + b"\n")
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass  # another process made it first: theirs is the key
    finally:
        os.unlink(temporary)
    return host_key(folder)


@dataclass(frozen=True)
class Disclosure:
    """The outgoing form of the index's rows for one tier, path choice, redaction choice and
    host key."""

    tier: str
    key: bytes
    redact_paths: bool = False
    redact: bool = False
    # A redactor made before (its rules take a moment to load): `push --watch` keeps one.
    loaded: Redactor | None = None

    def __post_init__(self) -> None:
        if self.tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}")

    def at_least(self, tier: str) -> bool:
        return TIERS.index(self.tier) >= TIERS.index(tier)

    def keyed(self, purpose: str, *parts: str) -> str:
        """A MAC of ``parts`` under the host key (keyed BLAKE2b, 256 bits), separated by
        ``purpose``: unguessable without the key, and a third of HMAC-SHA-256's time."""
        message = "\0".join((purpose, *parts)).encode("utf-8", "surrogatepass")
        return hashlib.blake2b(message, key=self.key, digest_size=32).hexdigest()

    @property
    def redacting(self) -> bool:
        """Whether text leaves, redacted (no text leaves at the usage tier)."""
        return self.redact and self.at_least("meta")

    @functools.cached_property
    def redactor(self) -> Redactor | None:
        """The secret redaction of the text that leaves, when ``redacting``. Made on first use
        (its rules take a moment to load), or the one ``loaded``."""
        if not self.redacting:
            return None
        return self.loaded or Redactor()

    def watermark(self, path: str, state: str) -> str:
        """What the server keeps of a file's state: equal when the state is, and nothing more
        (the path is in it, so two files in the same state do not look alike); redacted text
        has another one than the text as it is."""
        if self.redacting:
            return self.keyed("watermark", path, state, REDACTED_MARK)
        return self.keyed("watermark", path, state)

    @property
    def form(self) -> str:
        """What the rows this disclosure sends are made of: its tier and redaction (the
        version of the rules when redacting). Rows sent in one form are not kept when a file
        is sent in another (push's ledger.py)."""
        return f"{self.tier} {REDACTED_MARK if self.redacting else 'as-is'}"

    def current(self, path: str, state: str) -> set[str]:
        """The watermarks that say the server holds a file in ``state`` as this tier sends it:
        ``watermark``'s and, at the usage tier, the one of redacted text (lowering the tier
        from a redacting push keeps it, with rows that are the usage tier's)."""
        if self.at_least("meta"):
            return {self.watermark(path, state)}
        return {self.watermark(path, state), self.keyed("watermark", path, state, REDACTED_MARK)}

    def history_state(self, state: str) -> str:
        """The watermark of the prompt history (full tier only) in ``state``."""
        redacted = (REDACTED_MARK,) if self.redacting else ()
        return self.keyed("history", state, str(self.redact_paths), *redacted)

    def directory(self, path: str | None) -> str | None:
        if path is None or not self.redact_paths:
            return path
        return LABEL_PREFIX + self.keyed("directory", path)[:12]

    @overload
    def path(self, path: str) -> str: ...
    @overload
    def path(self, path: None) -> None: ...
    def path(self, path: str | None) -> str | None:
        """A session file's path: its folder labelled, its name (a time and an id) kept."""
        if path is None or not self.redact_paths:
            return path
        folder, _, name = path.rpartition("/")
        return f"{self.directory(folder)}/{name}"

    def session(self, values: tuple[Any, ...]) -> list[Any]:
        """A row of SESSION_COLUMNS as it leaves."""
        row = list(values)
        shown = self.at_least("meta")
        texts = [row[position] if shown else None for position in _META]
        if self.redactor is not None:
            # Scanned together: a title cut from the first message loses the piece of a
            # secret that the cut left it.
            texts = self.redactor.texts(texts)
        meta = [(text, None) for text in texts]
        for position, (text, _raw) in zip(_META, self.content(meta), strict=True):
            row[position] = text
        for position in _SESSION_DIRECTORIES:
            row[position] = self.directory(row[position])
        for position in _SESSION_FILES:
            row[position] = self.path(row[position])
        return row

    def entries(
        self, entries: Sequence[EntryRow]
    ) -> list[tuple[list[Any], str | None, str | None]]:
        """Entries' ENTRY_COLUMNS, text and raw JSON as they leave (hand over a file's entries
        at once: their text is scanned for secrets a chunk at a time)."""
        rows = [list(entry.values) for entry in entries]
        if not self.at_least("full"):
            for row in rows:
                for position in _TEXT_HASH:
                    row[position] = None
            return [(row, None, None) for row in rows]
        texts = self.content([(entry.text, entry.raw) for entry in entries])
        return [(row, text, raw) for row, (text, raw) in zip(rows, texts, strict=True)]

    def blob_refs(self, entry: EntryRow) -> list[str]:
        """The digests of the blobs an entry references: full tier only (a digest of an image
        or a long output confirms a guess of it as a prompt's would)."""
        return entry.blob_refs if self.at_least("full") else []

    def usage(self, values: tuple[Any, ...]) -> list[Any]:
        """A row of USAGE_COLUMNS as it leaves."""
        row = list(values)
        for position in _USAGE_DIRECTORIES:
            row[position] = self.directory(row[position])
        return row

    def history(self, rows: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
        """Rows of HISTORY_COLUMNS (full tier only) as they leave."""
        out = [list(values) for values in rows]
        prompts = self.content([(row[_HISTORY_PROMPT], None) for row in out])
        for row, (prompt, _raw) in zip(out, prompts, strict=True):
            row[_HISTORY_PROMPT] = prompt or ""
            row[_HISTORY_CWD] = self.directory(row[_HISTORY_CWD])
        return out

    def content(
        self, texts: Sequence[tuple[str | None, str | None]]
    ) -> list[tuple[str | None, str | None]]:
        """Every text a person or an agent wrote passes here on its way out (titles, first
        messages, entry text and JSON, prompts), as pairs of a text and the JSON it was read
        from (None for a title or a prompt): its secrets replaced by ``[REDACTED:<kind>]``
        when redacting (a secret found in the JSON is taken out of the text too; many texts
        are scanned at once), then valid UTF-8 without NUL, which both the server and Parquet
        store. This is the one place to transform such text as it leaves."""
        if self.redactor is not None:
            texts = self.redactor.entries(texts)
        return [(outgoing_text(text), outgoing_text(raw)) for text, raw in texts]


def outgoing_text(value: Any) -> Any:
    """A value PostgreSQL and Parquet can store: text without NUL characters (a JSON \\u0000
    escape in a message becomes one) and without lone surrogates (the index repairs those in
    texts, but paths can hold them)."""
    if type(value) is not str or (value.isascii() and "\x00" not in value):
        return value
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value
