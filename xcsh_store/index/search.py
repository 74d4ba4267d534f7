"""Full-text search over entries: safe query parsing, bm25 + recency ranking, snippets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import apsw

_QUERY_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
SNIPPET_TOKENS = 12
# How many ranked candidates to fetch before filters and the recency tie-break are applied.
CANDIDATE_FACTOR = 4


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A user query as FTS5 syntax; ``match`` is None when nothing positive was asked for."""

    match: str | None
    words: tuple[str, ...]
    excluded: tuple[str, ...]


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def parse_search_query(query: str, prefix_last: bool = True) -> ParsedQuery:
    """Turn plain words, ``"phrases"`` and ``-excluded`` words into an FTS5 expression.

    Every term is quoted, so no user text (operators, parentheses, ``*``, ``:``, ``NEAR``,
    unbalanced quotes) can produce an FTS5 syntax error. All positive terms must match; the last
    plain word also matches as a prefix.
    """
    positive: list[str] = []
    excluded: list[str] = []
    words: list[str] = []
    last_plain = -1
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
        positive.append(_quote(text))
        last_plain = len(positive) - 1 if word is not None else -1
    if prefix_last and last_plain >= 0 and last_plain == len(positive) - 1:
        positive[last_plain] += "*"
    if not positive:
        return ParsedQuery(None, tuple(words), tuple(excluded))
    expression = " ".join(positive)
    if excluded:
        expression = f"({expression})" + "".join(f" NOT {term}" for term in excluded)
    return ParsedQuery(expression, tuple(words), tuple(excluded))


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
    """Ranked hits across every session (bm25, then newest first)."""
    parsed = parse_search_query(query)
    if parsed.match is None or limit <= 0:
        return []
    conditions: list[str] = []
    arguments: list[Any] = [parsed.match]
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
    where = "".join(f" AND {condition}" for condition in conditions)
    ranked = connection.execute(
        "SELECT f.rowid, bm25(entries_fts) AS score FROM entries_fts AS f"
        " JOIN entries AS e ON e.pk = f.rowid JOIN sessions AS s ON s.file_id = e.session"
        f" WHERE entries_fts MATCH ?{where}"
        " ORDER BY score, e.timestamp DESC LIMIT ?",
        (*arguments, limit),
    ).fetchall()
    if not ranked:
        return []
    pks = [pk for pk, _score in ranked]
    marks = ",".join("?" * len(pks))
    details = {
        row[0]: row
        for row in connection.execute(
            "SELECT f.rowid, snippet(entries_fts, 0, ?, ?, '…', ?), s.session_id, s.path, s.title,"
            " s.cwd, e.id, e.type, e.role, e.model, e.timestamp, e.session"
            " FROM entries_fts AS f JOIN entries AS e ON e.pk = f.rowid"
            " JOIN sessions AS s ON s.file_id = e.session"
            f" WHERE entries_fts MATCH ? AND f.rowid IN ({marks})",
            (*highlight, SNIPPET_TOKENS, parsed.match, *pks),
        )
    }
    hits = []
    for pk, score in ranked:
        row = details[pk]
        hits.append(
            SearchHit(
                session_id=row[2], path=row[3], title=row[4], cwd=row[5], entry_id=row[6],
                type=row[7], role=row[8], model=row[9], timestamp=row[10], snippet=row[1],
                score=score, file_id=row[11], pk=pk,
            )
        )  # fmt: skip
    return hits
