"""Full-text search over entries: safe query parsing, bm25 + recency ranking, snippets."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import apsw

from xcsh_store.errors import SearchQueryError
from xcsh_store.index.archive.sources import sources_of
from xcsh_store.index.model.search_rows import stale_count

# The roles and their check are the questions' (questions.py); named here too for old imports.
from xcsh_store.index.read.questions import SEARCH_ROLES as SEARCH_ROLES
from xcsh_store.index.read.questions import SearchQuery, model_match
from xcsh_store.index.read.questions import search_role as search_role
from xcsh_store.index.read.ranking import WINDOW, completions, phrase_idfs
from xcsh_store.index.read.sessions import SEARCH_FILTER, filter_sql, host_of
from xcsh_store.index.read.texts import TEXT_SOURCE, texts_of

_QUERY_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
SNIPPET_TOKENS = 12
# A trailing prefix word stands for at most this many of its completions (the most common).
PREFIX_COMPLETIONS = 24
# A snippet tokenizes this much of a text first, and more (8 times as much each time) only when
# the first hit is not in it: most hits are near the start of a text of up to 64 KiB.
SNIPPET_SCAN_BYTES = 4_096
# Ranked rows looked at beyond the limit, for hits whose file changed since the last sync.
STALE_MARGIN = 10

# The tokenizer of entries_fts, as migrations/0006_fts_symbols.sql declares it (the reasons are
# there). The query parser and the highlighter run it too, so they split and fold text exactly
# as the index does.
FTS_TOKENIZER = ("unicode61", "remove_diacritics", "2", "categories", "L* N* Co Sm So",
                 "separators", "+<=>|~")  # fmt: skip


class FtsTokens:
    """The tokens of a text under entries_fts's tokenizer, run by SQLite itself."""

    def __init__(self, connection: apsw.Connection | None = None) -> None:
        # Any connection has unicode61; a private in-memory one serves callers without an index.
        connection = connection if connection is not None else apsw.Connection(":memory:")
        self._tokenize = connection.fts5_tokenizer(FTS_TOKENIZER[0], list(FTS_TOKENIZER[1:]))

    def spans(self, data: bytes) -> list[tuple[int, int, str]]:
        """(start, end, folded token) of each token of UTF-8 ``data``; offsets in bytes."""
        # With offsets and without colocated tokens, the tokenizer gives (start, end, token).
        spans = self._tokenize(data, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_colocated=False)
        return cast("list[tuple[int, int, str]]", spans)

    def terms(self, text: str) -> list[str]:
        """The folded tokens of ``text``, as FTS5 reads them from a query."""
        tokens = self._tokenize(
            utf8(text),
            apsw.FTS5_TOKENIZE_QUERY,
            None,
            include_offsets=False,
            include_colocated=False,
        )
        return cast("list[str]", tokens)  # without offsets: the tokens alone


def utf8(text: str) -> bytes:
    # A lone surrogate (from a JavaScript caller) is a separator to the tokenizer, not an error.
    return text.encode("utf-8", "surrogatepass")


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A user query taken apart: quoted FTS5 phrases, the prefix word, excluded terms.

    ``terms`` holds the folded tokens of each positive word (of ``words``), the prefix word's
    last; words and excluded words without any token (punctuation) are left out.
    """

    phrases: tuple[str, ...]
    prefix: str | None
    excluded: tuple[str, ...]
    words: tuple[str, ...]
    terms: tuple[tuple[str, ...], ...] = ()

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
                positive.append(quote(self.prefix) + "*")
            elif not completions:
                return None
            else:
                positive.append("(" + " OR ".join(map(quote, completions)) + ")")
        if not positive:
            return None
        expression = " AND ".join(positive)
        if self.excluded:
            expression = f"({expression})" + "".join(f" NOT {term}" for term in self.excluded)
        return expression

    def ranked_phrases(
        self, completions: list[tuple[str, int]] | None
    ) -> tuple[list[str], int | None]:
        """The phrases of :meth:`expression` ranked one by one (FTS5's first phrases), and the
        texts the completions are in, as last counted (None without completions): they are
        ranked as one group, after them (see ranking.register_rank)."""
        phrases = list(self.phrases)
        if self.prefix is not None and completions is None:
            phrases.append(quote(self.prefix) + "*")
        group = None if completions is None else sum(documents for _, documents in completions)
        return phrases, group


def quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def parse_search_query(query: str, tokens: FtsTokens | None = None) -> ParsedQuery:
    """Plain words, ``"phrases"`` and ``-excluded`` words, as FTS5 terms that cannot fail.

    Every term is quoted, so no user text (operators, parentheses, ``*``, ``:``, ``NEAR``,
    unbalanced quotes) can produce an FTS5 syntax error. All positive terms must match; the last
    plain word also matches as a prefix. A word the tokenizer finds no token in (``#``, ``...``)
    is dropped: as an FTS5 phrase it would match nothing, and so hide every hit.
    """
    tokens = tokens if tokens is not None else FtsTokens()
    phrases: list[str] = []
    excluded: list[str] = []
    words: list[str] = []
    terms: list[tuple[str, ...]] = []
    prefix: str | None = None
    # FTS5 reads a query string only up to a NUL.
    for match in _QUERY_TOKEN.finditer(query.replace("\0", " ")):
        negated, phrase, word = match.group(1), match.group(2), match.group(3)
        if word is not None:
            negated = "-" if word.startswith("-") and len(word) > 1 else ""
            text = word[1:] if negated else word
        else:
            text = phrase
        folded = tuple(tokens.terms(text))
        if not folded:
            continue
        if negated:
            excluded.append(quote(text))
            continue
        words.append(text)
        terms.append(folded)
        if prefix is not None:
            phrases.append(quote(prefix))
        prefix = None
        if word is not None:
            prefix = text
        else:
            phrases.append(quote(text))
    return ParsedQuery(tuple(phrases), prefix, tuple(excluded), tuple(words), tuple(terms))


def prefix_completions(
    connection: apsw.Connection, terms: tuple[str, ...]
) -> list[tuple[str, int]] | None:
    """The most common indexed terms starting with the prefix word's ``terms``, with the number
    of texts each is in, or None to let FTS5 expand it.

    Only a prefix that is a single token can be expanded term by term.
    """
    if len(terms) != 1:
        return None
    return completions(connection, terms[0], PREFIX_COMPLETIONS)


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
    # Which agent wrote the session (xcsh, pi, omp or a plugin's name: claude, codex, …).
    agent: str = "xcsh"

    def to_json(self, on_active_branch: bool | None = None) -> dict[str, Any]:
        """The hit as ``search --json`` prints it (the MCP tool prints the same keys; the
        team index's hits add ``host``); ``on_active_branch`` when it is known."""
        shape = {
            "session_id": self.session_id,
            "agent": self.agent,
            "path": self.path,
            "title": self.title,
            "cwd": self.cwd,
            "entry_id": self.entry_id,
            "type": self.type,
            "role": self.role,
            "model": self.model,
            "timestamp": self.timestamp,
            "snippet": self.snippet,
            "score": self.score,
        }
        if on_active_branch is not None:
            shape["on_active_branch"] = on_active_branch
        return shape | host_of(self)


def model_condition(table: str, model: str) -> tuple[str, list[str]]:
    """The condition (and its values) an entry of ``table`` meets when it is of ``model``
    (questions.model_match: a model id, or ``provider/model`` as usage prints it)."""
    return f"({table}.model = ? OR ({table}.provider = ? AND {table}.model = ?))", list(
        model_match(model)
    )


def search_entries(
    connection: apsw.Connection,
    query: SearchQuery,
    local_path: Callable[[str], str] | None = None,
) -> list[SearchHit]:
    """Ranked hits across every session: bm25, then newest first (index/read/ranking.py).

    bm25 has to look at every match, so a query matching more than ``WINDOW`` entries ranks
    only the newest that many (entry keys grow as files are indexed, oldest first); this keeps
    every search fast on any corpus size. SearchQueryError: the query has no word to search
    for. ``local_path`` maps stored paths to where the files are now (see entry_texts); the
    texts of files that are gone are read from their archive.
    """
    archive = sources_of(connection)
    tokens = FtsTokens(connection)
    parsed = parse_search_query(query.text, tokens)
    if not parsed.terms:
        raise SearchQueryError(
            "Nothing to search for: give at least one word"
            " (punctuation is not searchable, and -excluded words only narrow a search)"
        )
    limit = query.limit
    if limit <= 0:
        return []
    completions = (
        prefix_completions(connection, parsed.terms[-1]) if parsed.prefix is not None else None
    )
    expression = parsed.expression(
        [term for term, _ in completions] if completions is not None else None
    )
    if expression is None:
        return []
    avgdl, group_idf, idfs = phrase_idfs(connection, *parsed.ranked_phrases(completions))
    conditions, values = filter_sql(query.filter, SEARCH_FILTER)
    arguments: list[Any] = [avgdl, group_idf, *idfs, expression, *values]
    if query.role is not None:
        conditions.append("e.role = ?")
        arguments.append(query.role)
    if query.model is not None:
        condition, model_values = model_condition("e", query.model)
        conditions.append(condition)
        arguments += model_values
    where = "".join(f" AND {condition}" for condition in conditions)
    marks = ", ?" * len(idfs)

    def ranked(joins: str) -> list[Any]:
        # The newest WINDOW matches are ranked; only the best few are joined to their sessions.
        return connection.execute(
            "SELECT c.pk, c.score, s.session_id, s.path, s.title, s.cwd, e.id, e.type, e.role,"
            f" e.model, e.timestamp, e.session, s.agent, {TEXT_SOURCE} FROM ("
            "  SELECT pk, score FROM ("
            f"   SELECT f.rowid AS pk, xcsh_rank(entries_fts, ?, ?{marks}) AS score"
            f"   FROM entries_fts AS f {joins} WHERE entries_fts MATCH ?{where}"
            "    ORDER BY f.rowid DESC LIMIT ?"
            "  ) ORDER BY score, pk DESC LIMIT ?"
            ") AS c JOIN entries AS e ON e.pk = c.pk JOIN sessions AS s ON s.file_id = e.session"
            " JOIN files AS f ON f.id = e.session ORDER BY c.score, c.pk DESC",
            (*arguments, WINDOW, limit + STALE_MARGIN),
        ).fetchall()

    joins = " JOIN entries AS e ON e.pk = f.rowid"
    if conditions:
        rows = ranked(joins + " JOIN sessions AS s ON s.file_id = e.session")
    else:
        # Stale search rows (stale_search.py) join no entry: they drop out after the ranking.
        # Only when that left fewer rows than asked for, while some rows are stale, are the
        # rows ranked again among those with an entry, which looks each ranked row up (a fifth
        # slower for a common word).
        rows = ranked("")
        if len(rows) < limit + STALE_MARGIN and stale_count(connection):
            rows = ranked(joins)
    highlighter = Highlighter(parsed, query.highlight, tokens)
    hits: list[SearchHit] = []
    # The text of a hit is read from its file; a hit whose file changed since the last sync
    # (and no longer holds the entry) is left out, and the next one takes its place.
    start = 0
    while start < len(rows) and len(hits) < limit:
        chunk = rows[start : start + limit - len(hits)]
        start += len(chunk)
        texts = texts_of((row[13:] for row in chunk), local_path, archive)
        # session id, path, title, cwd, entry id, type, role, model, timestamp, snippet, score,
        # file id, pk, agent
        hits += [
            SearchHit(row[2], local_path(row[3]) if local_path else row[3], row[4], row[5],
                      row[6], row[7], row[8], row[9], row[10],
                      highlighter.snippet(texts[row[0]] or ""), row[1], row[11], row[0], row[12])
            for row in chunk
            if row[0] in texts
        ]  # fmt: skip
    return hits


# --------------------------------------------------------------------------------------------
# Snippets
#
# entries_fts keeps no text (migration 0007), so FTS5's snippet() has nothing to cut from; it
# would also re-evaluate the query for every row, which for a prefix term means merging the
# postings of every matching word again. The few hits shown are highlighted here instead, in
# the text read from their files (index/read/texts.py), tokenized by
# entries_fts's own tokenizer and marked as FTS5's highlight() marks them: every instance of a
# query phrase (all its tokens, the prefix word as a prefix), overlapping instances as one.


class Highlighter:
    """Finds the first place a parsed query matches in a text and marks its words."""

    def __init__(self, parsed: ParsedQuery, markers: tuple[str, str], tokens: FtsTokens) -> None:
        self.markers = markers
        self.tokens = tokens
        last = len(parsed.terms) - 1
        # Each query phrase as a list of folded tokens, and whether its last token is a prefix.
        self.checks = [
            (list(terms), parsed.prefix is not None and number == last)
            for number, terms in enumerate(parsed.terms)
        ]
        self.firsts = tuple({terms[0] for terms in parsed.terms})

    def instances(self, folded: list[str]) -> list[tuple[int, int]]:
        """(first, last) token index of each query phrase instance, overlapping ones merged."""
        found: list[tuple[int, int]] = []
        # One startswith() over all first terms finds the few places worth a closer look.
        candidates = [index for index, token in enumerate(folded) if token.startswith(self.firsts)]
        for index in candidates:
            end = -1
            for phrase, is_prefix in self.checks:
                stop = index + len(phrase)
                if stop <= end + 1 or stop > len(folded):
                    continue
                if is_prefix:
                    matched = folded[stop - 1].startswith(phrase[-1]) and (
                        folded[index : stop - 1] == phrase[:-1]
                    )
                else:
                    matched = folded[index:stop] == phrase
                if matched:
                    end = stop - 1
            if end < 0:
                continue
            if found and index <= found[-1][1]:
                found[-1] = (found[-1][0], max(end, found[-1][1]))
            else:
                found.append((index, end))
        return found

    def snippet(self, text: str, width: int = SNIPPET_TOKENS) -> str:
        """About ``width`` tokens around the first hit, hits marked, whitespace collapsed."""
        data = utf8(text)
        scanned = SNIPPET_SCAN_BYTES
        while True:
            whole = scanned >= len(data)
            spans = self.tokens.spans(data if whole else data[:scanned])
            instances = self.instances([token for _, _, token in spans])
            # A cut text is enough when its first hit has room for a snippet before the cut
            # (the token at the cut may be a part of a token).
            if whole or (instances and instances[0][1] + width < len(spans)):
                break
            scanned *= 8
        if not spans:
            return ""
        first = instances[0][0] if instances else 0
        start = max(0, first - width // 4)
        end = min(len(spans), start + width)
        start = max(0, end - width)
        opening, closing = self.markers
        pieces = []
        cursor = spans[start][0]
        for first_token, last_token in instances:
            if last_token < start or first_token >= end:
                continue
            span_start = spans[max(first_token, start)][0]
            span_end = spans[min(last_token, end - 1)][1]
            pieces += [_text(data[cursor:span_start]), opening, _text(data[span_start:span_end])]
            pieces.append(closing)
            cursor = span_end
        pieces.append(_text(data[cursor : spans[end - 1][1]]))
        body = "".join(pieces)
        if end < len(spans) or not whole:
            body += "…"
        if start > 0:
            body = "…" + body
        return " ".join(body.split())


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")
