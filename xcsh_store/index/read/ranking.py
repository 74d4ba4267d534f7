"""Ranking search hits by bm25 at a cost that does not grow with the index.

FTS5's own bm25() first counts every row that holds each query phrase (its inverse document
frequency, IDF): for a common word that is a walk over hundreds of thousands of rows, on every
query, whichever few rows are ranked. Here the IDF is worked out before the query: counted
exactly for a phrase with few matches, and estimated for a common one from how densely its
newest matches lie among the newest rows (entry keys grow as files are indexed), which takes
one short look at the newest matches. ``xcsh_rank`` then scores a row by bm25's formula with
those IDFs.

The prefix word of a query stands for its most common completions, and counting the documents
of each completion is the same walk; ``search_terms`` keeps those counts from the last time
they were taken (refresh_term_counts), for the prefixes whose completions are common.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import apsw

from xcsh_store.index.db import get_meta, set_meta, transaction
from xcsh_store.index.model.search_rows import index_size

# bm25's constants, as FTS5 sets them.
K1 = 1.2
B = 0.75
# An IDF that is not positive (a phrase in over half of all rows) is this, as in FTS5.
MIN_IDF = 1e-6
# The newest matches a phrase's frequency is judged by, and the most rows a query ranks.
WINDOW = 300
# A prefix whose completions were in at most this many documents in all (as last counted) has
# them counted afresh: quick, and it sees words indexed since.
LIVE_COMPLETION_DOCUMENTS = 20_000
# search_terms is counted again when the number of indexed texts changed by this share.
TERM_COUNTS_DRIFT = 0.1


def bm25_score(api: apsw.FTS5ExtensionApi, avgdl: float, group_idf: float, *idfs: float) -> float:
    """``xcsh_rank(entries_fts, avgdl, group_idf, idf_0, idf_1, …)``: bm25 with the IDFs given;
    lower is better, as bm25() returns it.

    ``idf_0…`` are those of the query's first phrases, in FTS5's order; every later phrase
    counts as one group with ``group_idf``: the completions a prefix word stands for, scored as
    FTS5 scores a prefix query (one term, whichever completion a text holds). Excluded phrases
    come last and are in no hit, so they add nothing to the group.
    """
    norm = K1 * (1 - B + B * api.column_size(0) / avgdl)
    score = 0.0
    rest = api.inst_count
    for phrase, idf in enumerate(idfs):
        frequency = len(api.phrase_locations(phrase)[0])
        rest -= frequency
        score += idf * frequency * (K1 + 1) / (frequency + norm)
    if group_idf and rest > 0:
        score += group_idf * rest * (K1 + 1) / (rest + norm)
    return -score


def idf(documents: float, rows: int) -> float:
    value = math.log((rows - documents + 0.5) / (documents + 0.5)) if rows else 0.0
    return value if value > 0 else MIN_IDF


def phrase_documents(connection: apsw.Connection, phrase: str, rows: int) -> float:
    """How many texts hold ``phrase`` (an FTS5 expression): counted when at most WINDOW do,
    else estimated from the share of the newest rows its newest WINDOW matches take."""
    ((found, oldest),) = connection.execute(
        "SELECT count(*), min(rowid) FROM (SELECT rowid FROM entries_fts"
        " WHERE entries_fts MATCH ? ORDER BY rowid DESC LIMIT ?)",
        (phrase, WINDOW),
    )
    if found < WINDOW:
        return found
    ((newest,),) = connection.execute("SELECT rowid FROM entries_fts ORDER BY rowid DESC LIMIT 1")
    # Keys are dense but for texts without words: scale the span by the share of keys in use.
    share = rows / newest if newest else 1.0
    return min(rows, found / max((newest - oldest + 1) * share, 1.0) * rows)


# --------------------------------------------------------------------------------------------
# Completions of a prefix


def completions(connection: apsw.Connection, start: str, limit: int) -> list[tuple[str, int]]:
    """The ``limit`` indexed terms starting with ``start`` in the most texts, with their counts.

    Counted afresh when they are few (as last counted), so new words are found at once; the
    completions of a very common prefix come from search_terms, as of its last count.
    """
    bounds = (start, start + "\U0010ffff")
    known = list(
        connection.execute(
            "SELECT term, doc FROM search_terms WHERE term >= ? AND term < ? ORDER BY doc DESC",
            bounds,
        )
    )
    if sum(doc for _, doc in known) > LIVE_COMPLETION_DOCUMENTS:
        return known[:limit]
    return list(
        connection.execute(
            "SELECT term, doc FROM entries_vocab WHERE term >= ? AND term < ? ORDER BY doc DESC"
            " LIMIT ?",
            (*bounds, limit),
        )
    )


def refresh_term_counts(connection: apsw.Connection) -> bool:
    """Count every term's texts again into search_terms when the number of texts indexed moved
    by TERM_COUNTS_DRIFT since the last count; returns whether it did. It reads the whole
    full-text index (a second or so per GB of sessions), so only after a sync that changed much.
    """
    rows, _ = index_size(connection)
    counted = get_meta(connection, "search_terms_rows")
    if counted is not None and abs(rows - int(counted)) <= int(counted) * TERM_COUNTS_DRIFT:
        return False
    with transaction(connection):
        connection.execute("DELETE FROM search_terms")
        connection.execute(
            "INSERT INTO search_terms (term, doc) SELECT term, doc FROM entries_vocab"
        )
        set_meta(connection, "search_terms_rows", str(rows))
    return True


def phrase_idfs(
    connection: apsw.Connection, phrases: Sequence[str], group_documents: int | None
) -> tuple[float, float, list[float]]:
    """(avgdl, group IDF, the IDF of each of ``phrases``) for xcsh_rank; ``phrases`` are FTS5
    expressions, and ``group_documents`` the texts the group's completions are in (their sum: at
    most the texts that hold any of them), or None without a group."""
    rows, avgdl = index_size(connection)
    group = 0.0 if group_documents is None else idf(min(group_documents, rows), rows)
    return (
        avgdl,
        group,
        [idf(phrase_documents(connection, phrase, rows), rows) for phrase in phrases],
    )
