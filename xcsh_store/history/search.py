"""Prompt search over history.db: the reference's query and order, answered without a full sort.

The reference runs one statement (compatibility: Prompt history as in the reference): FTS5 MATCH on
``"token"*`` phrases, join, ORDER BY created_at DESC, id DESC. On a large history two costs dominate
it. FTS5 has no prefix index here, so each ``"token"*`` first merges the lists of every word
starting with the token (a tenth of a second for "the" among a million prompts, more for one
letter); and every match is looked up and sorted. ``newest_matches`` returns exactly the rows of
that statement, usually without either cost; ``tests/test_history.py`` compares the two on generated
data.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from typing import cast

import apsw
import orjson

from xcsh_store.js import WHITESPACE, trim, well_formed

# xcsh splits a query on runs of the regex \s, which matches the characters trim() strips.
_WHITESPACE_RUN = re.compile(f"[{WHITESPACE}]+")

Row = tuple[int, str, int, str | None]

RECENT_SQL = (
    "SELECT id, prompt, created_at, cwd FROM history ORDER BY created_at DESC, id DESC LIMIT ?"
)
# The reference's search as xcsh runs it: newest_matches returns exactly its rows. Kept here as
# the statement tests and benchmarks compare against.
REFERENCE_SEARCH_SQL = (
    "SELECT h.id, h.prompt, h.created_at, h.cwd FROM history_fts f JOIN history h ON h.id = f.rowid"
    " WHERE history_fts MATCH ? ORDER BY h.created_at DESC, h.id DESC LIMIT ?"
)
_MATCH_IDS_SQL = "SELECT rowid FROM history_fts WHERE history_fts MATCH ? ORDER BY rowid DESC"
_ROWS_BY_ID_SQL = (
    "SELECT id, prompt, created_at, cwd FROM history WHERE id IN (SELECT value FROM json_each(?))"
    " ORDER BY created_at DESC, id DESC LIMIT ?"
)
_OLDEST_TIME_SQL = (
    "SELECT min(created_at) FROM history WHERE id IN (SELECT value FROM json_each(?))"
)
# Rows with a lower id but a later time than a given row; "+id" keeps SQLite on the created_at
# index, whose range is short when ids and times grow together.
_LATER_ROWS_SQL = "SELECT id FROM history WHERE created_at > ? AND +id < ?"
_RANKED_SQL = (
    "SELECT h.id, h.prompt, h.created_at, h.cwd FROM history_fts f JOIN history h ON h.id = f.rowid"
    " WHERE history_fts MATCH ? ORDER BY bm25(history_fts), h.created_at DESC, h.id DESC LIMIT ?"
)

# Step 1 checks up to this many of the newest prompts (or four times the limit, if more), and
# gives up as soon as the matches seen so far are too few to fill the limit within them: a query
# that one prompt in sixty matches is answered in a few milliseconds (a million prompts, limit
# 50), and a rare one loses well under one before FTS5 takes over.
MAX_RECENT_SCAN = 3000
SCAN_STEP = 100
# Step 2 reads matches by id until it has this many (or four times the limit); fewer than that
# are all the matches, and sorting them all is cheap.
MIN_MATCH_WINDOW = 1000


def query_tokens(query: str) -> list[str]:
    """The query split like xcsh does: trimmed, on runs of whitespace.

    A NUL separates tokens too: FTS5 reads a query only up to a NUL, so a token holding one
    would leave its quote unclosed.
    """
    text = well_formed(trim(query)).replace("\0", " ")
    return [token for token in _WHITESPACE_RUN.split(text) if token]


def fts_query(tokens: Sequence[str]) -> str:
    """Each token as a quoted prefix phrase, all of them required, as in the reference.

    Quoting every token (with ``"`` doubled) leaves FTS5 nothing to parse as syntax, so no user
    text can cause a query error.
    """
    return " ".join('"' + token.replace('"', '""') + '"*' for token in tokens)


def build_fts_query(query: str) -> str:
    """The FTS5 MATCH string of a search; ``""`` means there is nothing to search for."""
    return fts_query(query_tokens(query))


def index_tokenizer(connection: apsw.Connection) -> apsw.FTS5Tokenizer | None:
    """The tokenizer of history_fts when it is the reference's default (unicode61), else None."""
    row = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'history_fts'").fetchone()
    if row is None or "tokenize" in row[0].lower():
        return None
    return connection.fts5_tokenizer("unicode61", [])


class _Phrase:
    """One ``"token"*`` as FTS5 reads it: its words in a row, the last one as a prefix."""

    __slots__ = ("leading", "prefix")

    def __init__(self, words: list[str]) -> None:
        *self.leading, self.prefix = words

    def found_in(self, words: list[str]) -> bool:
        size = len(self.leading)
        return any(
            words[start + size].startswith(self.prefix)
            and words[start : start + size] == self.leading
            for start in range(len(words) - size)
        )


class _Matcher:
    """Tests prompts against a query the way FTS5 would, using the index's own tokenizer."""

    def __init__(self, tokenizer: apsw.FTS5Tokenizer, tokens: Sequence[str]) -> None:
        self._tokenizer = tokenizer
        flags = apsw.FTS5_TOKENIZE_QUERY | apsw.FTS5_TOKENIZE_PREFIX
        # FTS5 ignores a phrase without words ("-", "🎉") unless nothing else is left.
        self.phrases = [_Phrase(words) for token in tokens if (words := self._words(token, flags))]
        self._query_words = {
            word for phrase in self.phrases for word in (*phrase.leading, phrase.prefix)
        }

    def _words(self, text: str, flags: int) -> list[str]:
        # Without offsets and colocated tokens the tokenizer gives the words alone.
        words = self._tokenizer(
            text.encode(), flags, None, include_offsets=False, include_colocated=False
        )
        return cast("list[str]", words)

    def matches(self, text: str) -> bool:
        # In ASCII text unicode61 words are lower-cased runs of letters and digits, so a query
        # word that is not a substring of the lower-cased text cannot match; most prompts are
        # rejected by this without being tokenized.
        if text.isascii():
            lowered = text.lower()
            if any(word not in lowered for word in self._query_words):
                return False
        words = self._words(text, apsw.FTS5_TOKENIZE_DOCUMENT)
        return all(phrase.found_in(words) for phrase in self.phrases)


def newest_matches(
    connection: apsw.Connection,
    tokenizer: apsw.FTS5Tokenizer | None,
    tokens: Sequence[str],
    count: int,
) -> list[Row]:
    """The ``count`` newest prompts matching ``tokens``: the rows of the reference's query.

    1. The newest prompts are checked here, newest first, with the index's own tokenizer: when
       the query matches many of them (common words, short prefixes) the first ``count`` that
       match are the answer, and FTS5 never builds its prefix lists.
    2. Otherwise FTS5 lists the matches highest id first, and ``_newest_by_time`` picks the
       answer from them without sorting them all.
    """
    if tokenizer is not None:
        matcher = _Matcher(tokenizer, tokens)
        if not matcher.phrases:
            return []
        hits = _scan_recent(connection, matcher, count)
        if len(hits) == count:
            return hits
    return _newest_by_time(connection, _fts_match_ids(connection, tokens), count)


def ranked_matches(connection: apsw.Connection, tokens: Sequence[str], count: int) -> list[Row]:
    """Best bm25 match first, newest first among equals (FTS5 ranks every match)."""
    return list(connection.execute(_RANKED_SQL, (fts_query(tokens), count)))


def _scan_recent(connection: apsw.Connection, matcher: _Matcher, count: int) -> list[Row]:
    """Step 1: the matches among the newest prompts, newest first, at most ``count``."""
    limit = max(MAX_RECENT_SCAN, 4 * count)
    hits: list[Row] = []
    cursor = connection.execute(RECENT_SQL, (limit,))
    try:
        for scanned, row in enumerate(cursor, start=1):
            if matcher.matches(row[1]):
                hits.append(row)
                if len(hits) == count:
                    break
            # At the rate seen so far, the limit would not fill within the scan.
            if scanned % SCAN_STEP == 0 and len(hits) * limit < count * scanned:
                break
    finally:
        cursor.close()
    return hits


def _fts_match_ids(connection: apsw.Connection, tokens: Sequence[str]) -> Iterator[int]:
    """Ids of every match, highest first, from FTS5 alone."""
    cursor = connection.execute(_MATCH_IDS_SQL, (fts_query(tokens),))
    try:
        for (match_id,) in cursor:
            yield match_id
    finally:
        cursor.close()


def _newest_by_time(connection: apsw.Connection, match_ids: Iterator[int], count: int) -> list[Row]:
    """The ``count`` newest of the matches (given highest id first) by created_at, then id.

    Ids grow with time, so the ``count`` highest-id matches are nearly always the answer. The
    only other rows that can rank above them have a lower id but a later created_at than the
    oldest of them (clock set back, rows imported or edited): the created_at index lists those
    directly, and those that match join the final sort.
    """
    window = max(MIN_MATCH_WINDOW, 4 * count)
    newest = list(itertools.islice(match_ids, window))
    candidates = newest
    if len(newest) == window:
        candidates = newest[:count]
        ((oldest_time,),) = connection.execute(_OLDEST_TIME_SQL, (_json_ids(candidates),))
        later = {
            row[0] for row in connection.execute(_LATER_ROWS_SQL, (oldest_time, newest[count - 1]))
        }
        if later:
            lowest = min(later)
            rest = itertools.chain(newest[count:], match_ids)
            candidates += [
                i for i in itertools.takewhile(lambda i: i >= lowest, rest) if i in later
            ]
    return list(connection.execute(_ROWS_BY_ID_SQL, (_json_ids(candidates), count)))


def _json_ids(ids: list[int]) -> str:
    return orjson.dumps(ids).decode()
