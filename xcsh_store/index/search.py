"""Full-text search over entries: safe query parsing, bm25 + recency ranking, snippets."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import apsw

_QUERY_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
SNIPPET_TOKENS = 12
# A trailing prefix word stands for at most this many of its completions (the most common).
PREFIX_COMPLETIONS = 24
SNIPPET_CONTEXT_CHARS = 120
SNIPPET_WINDOW_CHARS = 400
# At most this many matches (the newest) are ranked by bm25; see search_entries.
RANKED_CANDIDATES = 2_000


_TOKEN = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Case- and diacritic-insensitive form of a token, like unicode61 remove_diacritics 2."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A user query taken apart: quoted FTS5 phrases, the prefix word, excluded terms."""

    phrases: tuple[str, ...]
    prefix: str | None
    excluded: tuple[str, ...]
    words: tuple[str, ...]

    @property
    def match(self) -> str | None:
        """The FTS5 expression with FTS5's own prefix syntax; None when nothing positive."""
        return self.expression(None)

    def expression(self, completions: list[str] | None) -> str | None:
        """The FTS5 expression; ``completions`` replaces the prefix word by an OR of terms.

        Terms are joined with an explicit AND: FTS5 does not accept an implicit AND next to a
        parenthesised group. An empty list of completions means nothing can match (None).
        """
        positive = list(self.phrases)
        if self.prefix is not None:
            if completions is None:
                positive.append(_quote(self.prefix) + "*")
            elif not completions:
                return None
            else:
                positive.append("(" + " OR ".join(map(_quote, completions)) + ")")
        if not positive:
            return None
        expression = " AND ".join(positive)
        if self.excluded:
            expression = f"({expression})" + "".join(f" NOT {term}" for term in self.excluded)
        return expression


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def parse_search_query(query: str) -> ParsedQuery:
    """Plain words, ``"phrases"`` and ``-excluded`` words, as FTS5 terms that cannot fail.

    Every term is quoted, so no user text (operators, parentheses, ``*``, ``:``, ``NEAR``,
    unbalanced quotes) can produce an FTS5 syntax error. All positive terms must match; the last
    plain word also matches as a prefix.
    """
    phrases: list[str] = []
    excluded: list[str] = []
    words: list[str] = []
    prefix: str | None = None
    # FTS5 reads a query string only up to a NUL.
    for match in _QUERY_TOKEN.finditer(query.replace("\0", " ")):
        negated, phrase, word = match.group(1), match.group(2), match.group(3)
        if word is not None:
            negated = "-" if word.startswith("-") and len(word) > 1 else ""
            text = word[1:] if negated else word
        else:
            text = phrase
        if not text.strip():
            continue
        if negated:
            excluded.append(_quote(text))
            continue
        words.append(text)
        if prefix is not None:
            phrases.append(_quote(prefix))
        prefix = None
        if word is not None:
            prefix = text
        else:
            phrases.append(_quote(text))
    return ParsedQuery(tuple(phrases), prefix, tuple(excluded), tuple(words))


def prefix_completions(connection: apsw.Connection, prefix: str) -> list[str] | None:
    """The most common indexed terms starting with ``prefix``, or None to let FTS5 expand it.

    Only a prefix that is a single token can be expanded term by term.
    """
    tokens = _TOKEN.findall(prefix)
    if len(tokens) != 1:
        return None
    start = fold(tokens[0])
    rows = connection.execute(
        "SELECT term FROM entries_vocab WHERE term >= ? AND term < ? ORDER BY doc DESC LIMIT ?",
        (start, start + "\U0010ffff", PREFIX_COMPLETIONS),
    )
    return [row[0] for row in rows]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching entry and where it lives."""

    session_id: str
    path: str
    title: str | None
    cwd: str | None
    entry_id: str | None
    type: str | None
    role: str | None
    model: str | None
    timestamp: str | None
    snippet: str
    score: float
    file_id: int
    pk: int


def _time_bound(value: datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    text = value.isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def search_entries(
    connection: apsw.Connection,
    query: str,
    *,
    cwd: str | None = None,
    project: str | None = None,
    role: str | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    model: str | None = None,
    limit: int = 20,
    highlight: tuple[str, str] = ("[", "]"),
) -> list[SearchHit]:
    """Ranked hits across every session: bm25, then newest first.

    bm25 has to look at every match, so a query matching more than ``RANKED_CANDIDATES``
    entries ranks only the newest that many (entry keys grow as files are indexed, oldest
    first); this keeps every search fast on any corpus size.
    """
    parsed = parse_search_query(query)
    if limit <= 0:
        return []
    completions = prefix_completions(connection, parsed.prefix) if parsed.prefix else None
    expression = parsed.expression(completions)
    if expression is None:
        return []
    conditions: list[str] = []
    arguments: list[Any] = [expression]
    for column, value in (
        ("s.cwd", cwd),
        ("s.project_dir", project),
        ("e.role", role),
        ("e.model", model),
    ):
        if value is not None:
            conditions.append(f"{column} = ?")
            arguments.append(value)
    if since is not None:
        conditions.append("e.timestamp >= ?")
        arguments.append(_time_bound(since))
    if until is not None:
        conditions.append("e.timestamp < ?")
        arguments.append(_time_bound(until))
    joins = (
        " JOIN entries AS e ON e.pk = f.rowid JOIN sessions AS s ON s.file_id = e.session"
        if conditions
        else ""
    )
    where = "".join(f" AND {condition}" for condition in conditions)
    rows = connection.execute(
        "SELECT c.pk, c.score, s.session_id, s.path, s.title, s.cwd, e.id, e.type, e.role,"
        " e.model, e.timestamp, e.session FROM ("
        "  SELECT f.rowid AS pk, bm25(entries_fts) AS score FROM entries_fts AS f"
        f"  {joins} WHERE entries_fts MATCH ?{where}"
        "  ORDER BY f.rowid DESC LIMIT ?"
        ") AS c JOIN entries AS e ON e.pk = c.pk JOIN sessions AS s ON s.file_id = e.session"
        " ORDER BY c.score, e.timestamp DESC LIMIT ?",
        (*arguments, RANKED_CANDIDATES, limit),
    ).fetchall()
    if not rows:
        return []
    marks = ",".join("?" * len(rows))
    texts = dict(
        connection.execute(
            f"SELECT rowid, text FROM entries_fts WHERE rowid IN ({marks})",
            [row[0] for row in rows],
        )
    )
    highlighter = Highlighter(parsed, highlight)
    return [
        SearchHit(
            session_id=row[2],
            path=row[3],
            title=row[4],
            cwd=row[5],
            entry_id=row[6],
            type=row[7],
            role=row[8],
            model=row[9],
            timestamp=row[10],
            snippet=highlighter.snippet(texts.get(row[0], "")),
            score=row[1],
            file_id=row[11],
            pk=row[0],
        )
        for row in rows
    ]


# --------------------------------------------------------------------------------------------
# Snippets
#
# FTS5's snippet() re-evaluates the query for every row, which for a prefix term means merging
# the postings of every matching word again: tens of milliseconds per hit on a large index.
# The text is stored anyway, so the few hits shown are highlighted here instead, with the same
# token rules as the unicode61 tokenizer (letters and digits; case and diacritics ignored).


class Highlighter:
    """Finds the first place a parsed query matches in a text and marks its words."""

    def __init__(self, parsed: ParsedQuery, markers: tuple[str, str]) -> None:
        self.markers = markers
        self.phrases: list[list[str]] = []
        for word in parsed.words:
            tokens = [fold(token) for token in _TOKEN.findall(word)]
            if tokens:
                self.phrases.append(tokens)
        self.prefix_last = parsed.prefix is not None
        firsts = sorted({phrase[0] for phrase in self.phrases}, key=len, reverse=True)
        # Finds the neighbourhood of a hit fast; exact matching then happens token by token.
        self.locator = (
            re.compile("|".join(map(re.escape, firsts)), re.IGNORECASE) if firsts else None
        )

    def _matches_at(self, folded: list[str], index: int) -> int:
        """Length in tokens of a query phrase starting at ``index`` (0 when none)."""
        for number, phrase in enumerate(self.phrases):
            end = index + len(phrase)
            if end > len(folded):
                continue
            is_prefix_phrase = self.prefix_last and number == len(self.phrases) - 1
            head_ok = folded[index : end - 1] == phrase[:-1]
            last = folded[end - 1]
            last_ok = last.startswith(phrase[-1]) if is_prefix_phrase else last == phrase[-1]
            if head_ok and last_ok:
                return len(phrase)
        return 0

    def snippet(self, text: str, width: int = SNIPPET_TOKENS) -> str:
        offset = 0
        found = self.locator.search(text) if self.locator else None
        if found is not None and found.start() > SNIPPET_CONTEXT_CHARS:
            offset = found.start() - SNIPPET_CONTEXT_CHARS
            boundary = text.rfind(" ", 0, offset)
            offset = boundary + 1 if boundary >= 0 else offset
        window = text[offset : offset + SNIPPET_WINDOW_CHARS]
        snippet = self._snippet_of(window, width)
        if offset > 0 and snippet and not snippet.startswith("…"):
            snippet = "…" + snippet
        if offset + SNIPPET_WINDOW_CHARS < len(text) and snippet and not snippet.endswith("…"):
            snippet += "…"
        return snippet

    def _snippet_of(self, text: str, width: int) -> str:
        spans = [match.span() for match in _TOKEN.finditer(text)]
        if not spans:
            return ""
        folded = [fold(text[start:end]) for start, end in spans]
        marked: set[int] = set()
        first = None
        for index in range(len(spans)):
            length = self._matches_at(folded, index)
            if length:
                first = index if first is None else first
                marked.update(range(index, index + length))
        start = max(0, (first or 0) - width // 4)
        end = min(len(spans), start + width)
        start = max(0, end - width)
        opening, closing = self.markers
        pieces = []
        cursor = spans[start][0]
        for index in range(start, end):
            token_start, token_end = spans[index]
            pieces.append(text[cursor:token_start])
            token = text[token_start:token_end]
            pieces.append(f"{opening}{token}{closing}" if index in marked else token)
            cursor = token_end
        body = "".join(pieces)
        if end < len(spans):
            body += "…"
        if start > 0:
            body = "…" + body
        return " ".join(body.split())
