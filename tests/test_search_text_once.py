"""Search text stored once (migration 0007): entries_fts keeps no text; hits, snippets and
prompts read it from the session files (the hits of a file that cannot be read now keep no
snippet: tests/test_reliability_hostile.py); rewritten and truncated files leave no stale hit,
and their stale search rows go once they are a tenth of the index (tests/test_stale_search.py);
verify probes the postings; the ranking is bm25 at a cost that does not grow with the index;
an index of the previous schema is upgraded in place."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner
from session_builder import append, header, message, sessions_dir, write_session

from xcsh_store.cli.app import cli
from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index import SessionIndex
from xcsh_store.index.model import search_rows
from xcsh_store.index.read import ranking
from xcsh_store.index.read.search import parse_search_query


def _session(agent_dir: Path, name: str, *texts: str) -> Path:
    records = [header(name)]
    parent = None
    for number, text in enumerate(texts):
        entry_id = f"{name}-{number}"
        records.append(message(entry_id, parent, "user" if number % 2 == 0 else "assistant", text))
        parent = entry_id
    return write_session(sessions_dir(agent_dir) / f"{name}.jsonl", records)


def test_entries_fts_keeps_no_copy_of_the_text(agent_dir, index):
    _session(agent_dir, "one", "the flaky login test", "fixed the login test")
    index.sync()
    assert index.connection.execute("SELECT text FROM entries_fts").fetchall() == [(None,)] * 2
    (hit,) = index.search("flaky")
    assert hit.snippet == "the [flaky] login test"


def test_a_rewritten_file_leaves_no_stale_postings_and_no_stale_hits(agent_dir, index):
    path = _session(agent_dir, "one", "alpha words here", "beta words there")
    index.sync()
    _session(agent_dir, "one", "gamma only now")
    os.utime(path, ns=(1, 1))  # the size changed anyway; the mtime must not matter
    # Before a sync the index still points at lines that are no longer those entries.
    assert index.search("alpha") == []
    index.sync()  # 2 of 3 texts stale: over a tenth, so they go at once
    assert index.search("alpha") == [] and index.search("beta") == []
    assert [hit.entry_id for hit in index.search("gamma")] == ["one-0"]
    ((words,),) = index.connection.execute(
        "SELECT count(*) FROM entries_vocab WHERE term IN ('alpha', 'beta')"
    ).fetchall()
    assert words == 0, "the old text's terms are still in the full-text index"
    assert index.verify().clean


def test_a_truncated_file_leaves_no_stale_postings(agent_dir, index):
    path = _session(agent_dir, "one", "kept words", "dropped words")
    index.sync()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))
    index.sync()
    assert index.search("dropped") == []
    assert [hit.entry_id for hit in index.search("kept")] == ["one-0"]
    ((terms,),) = index.connection.execute(
        "SELECT count(*) FROM entries_vocab WHERE term = 'dropped'"
    ).fetchall()
    assert terms == 0
    assert index.verify().clean


def test_a_hit_whose_file_is_gone_is_left_out_until_the_next_sync(agent_dir, index):
    gone = _session(agent_dir, "gone", "shared word")
    _session(agent_dir, "kept", "shared word")
    index.sync()
    gone.unlink()
    assert [hit.session_id for hit in index.search("shared")] == ["kept"]


def test_sql_has_entry_text(agent_dir, index):
    _session(agent_dir, "one", "text from the file")
    index.sync()
    query = "SELECT entry_text(rowid) AS text FROM entries_fts WHERE entries_fts MATCH 'file'"
    result = CliRunner().invoke(
        cli, ["--agent-dir", str(agent_dir), "sql", "--json", query], catch_exceptions=False
    )
    assert json.loads(result.output) == [{"text": "text from the file"}]


def test_session_prompts_are_read_from_the_file(agent_dir, index):
    _session(agent_dir, "one", "how do I rotate the keys", "like this")
    index.sync()
    (hit,) = index.history_search("rotate")
    assert hit.prompt == "how do I rotate the keys" and hit.source == "session"


# --------------------------------------------------------------------------------------------
# verify


def _unindex(index: SessionIndex, entry_id: str, text: str) -> int:
    """Take an entry's row out of entries_fts (given the text it was indexed from); its key."""
    ((pk,),) = index.connection.execute(
        "SELECT pk FROM entries WHERE id = ?", (entry_id,)
    ).fetchall()
    index.connection.execute(
        "INSERT INTO entries_fts (entries_fts, rowid, text) VALUES ('delete', ?, ?)", (pk, text)
    )
    return pk


def test_verify_finds_an_entry_missing_from_the_full_text_index(agent_dir, index):
    path = _session(agent_dir, "one", "first words", "second words")
    index.sync()
    _unindex(index, "one-1", "second words")
    report = index.verify()
    assert list(report.differences) == [str(path)]
    assert "search text" in report.differences[str(path)][0]
    index.verify(repair=True)
    assert index.verify().clean
    assert [hit.entry_id for hit in index.search("second")] == ["one-1"]


def test_verify_finds_an_entry_indexed_under_words_it_does_not_hold(agent_dir, index):
    """The same number of tokens, other words: only probing the postings can tell."""
    path = _session(agent_dir, "one", "apples and pears")
    index.sync()
    pk = _unindex(index, "one-0", "apples and pears")
    index.connection.execute(
        "INSERT INTO entries_fts (rowid, text) VALUES (?, 'plums and grapes')", (pk,)
    )
    report = index.verify()
    assert report.differences[str(path)] == [
        "search text: entry 1 is not found under the words of its text"
    ]


def test_verify_finds_search_rows_of_gone_entries_and_repair_drops_them(agent_dir, index):
    _session(agent_dir, "one", "real words")
    index.sync()
    index.connection.execute("INSERT INTO entries_fts (rowid, text) VALUES (999999, 'ghost')")
    report = index.verify()
    assert report.search_errors == ["search: 1 indexed texts belong to no entry, 0 were counted"]
    assert not report.clean
    index.verify(repair=True)
    assert index.verify().clean
    assert index.search("ghost") == []


# --------------------------------------------------------------------------------------------
# Ranking


def test_xcsh_rank_is_fts5s_bm25_when_the_frequencies_are_counted(agent_dir, index):
    texts = ["red apple", "red red apple pie", "green apple tart", "red wine", "apple " * 9]
    for number in range(8):
        _session(agent_dir, f"s{number}", *texts[number % 5 :], *texts[: number % 5])
    index.sync()
    connection = index.connection
    for query in ['"red"', '"apple"', '"red" AND "apple"', '"apple pie"', '"red" NOT "wine"']:
        phrases = [part.strip('"() ') for part in query.replace(" NOT ", " AND ").split(" AND ")]
        avgdl, _, idfs = ranking.phrase_idfs(connection, [f'"{p}"' for p in phrases], None)
        marks = ", ?" * len(idfs)
        rows = connection.execute(
            f"SELECT bm25(entries_fts), xcsh_rank(entries_fts, ?, 0{marks}) FROM entries_fts"
            " WHERE entries_fts MATCH ?",
            (avgdl, *idfs, query),
        ).fetchall()
        assert rows
        for theirs, ours in rows:
            assert math.isclose(theirs, ours, rel_tol=1e-9, abs_tol=1e-12), query


def test_the_frequency_of_a_common_phrase_is_estimated_from_its_newest_matches(
    agent_dir, index, monkeypatch
):
    monkeypatch.setattr(ranking, "WINDOW", 25)
    _session(agent_dir, "one", *[("common rare" if n % 10 == 0 else "common") for n in range(200)])
    index.sync()
    rows, _ = search_rows.index_size(index.connection)
    assert rows == 200
    assert ranking.phrase_documents(index.connection, '"rare"', rows) == 20  # counted
    estimate = ranking.phrase_documents(index.connection, '"common"', rows)
    assert estimate == pytest.approx(200, rel=0.05)


def test_a_common_prefix_completes_from_the_counted_terms_a_rare_one_afresh(
    agent_dir, index, monkeypatch
):
    monkeypatch.setattr(ranking, "LIVE_COMPLETION_DOCUMENTS", 5)
    path = _session(agent_dir, "one", *["testing tests tester"] * 10, "rarely")
    index.sync()
    counted = dict(index.connection.execute("SELECT term, doc FROM search_terms"))
    assert counted["testing"] == 10 and counted["rarely"] == 1
    # New words: "tested" is missing from the counts until they are taken again, a new rare
    # word is completed at once.
    append(path, message("late", "one-10", "user", "tested rarefied"))
    index.sync()
    assert "tested" not in dict(index.connection.execute("SELECT term, doc FROM search_terms"))
    common = [term for term, _ in ranking.completions(index.connection, "test", 24)]
    assert sorted(common) == ["tester", "testing", "tests"]
    rare = [term for term, _ in ranking.completions(index.connection, "rare", 24)]
    assert sorted(rare) == ["rarefied", "rarely"]
    assert [hit.entry_id for hit in index.search("rarefi")] == ["late"]


def test_search_terms_are_counted_again_when_the_index_grew_by_a_tenth(agent_dir, index):
    path = _session(agent_dir, "one", *[f"word{n}" for n in range(20)])
    index.sync()
    append(path, message("more", "one-19", "user", "novel"))
    index.sync()  # 21 texts: within a tenth of 20
    assert "novel" not in dict(index.connection.execute("SELECT term, doc FROM search_terms"))
    append(path, message("again", "more", "user", "newer"))
    append(path, message("third", "again", "user", "newest"))
    index.sync()  # 23 texts: over a tenth more
    counted = dict(index.connection.execute("SELECT term, doc FROM search_terms"))
    assert {"novel", "newer", "newest"} <= set(counted)


def test_a_prefix_is_ranked_as_one_term_whichever_completion_a_text_holds(agent_dir, index):
    _session(agent_dir, "one", "deploying", "deployment deployment", "unrelated words")
    index.sync()
    hits = index.search("deploy")
    assert [hit.entry_id for hit in hits] == ["one-1", "one-0"]
    parsed = parse_search_query("deploy")
    assert parsed.ranked_phrases([("deploying", 1), ("deployment", 1)]) == ([], 2)


# --------------------------------------------------------------------------------------------
# Upgrade in place


def _as_of_0006(db_path: Path) -> None:
    """Put an index back to the schema before 0007: entries_fts keeping its text."""
    connection = apsw.Connection(str(db_path))
    connection.execute(
        "DROP TABLE entries_vocab; DROP TABLE entries_fts; DROP TABLE search_terms;"
        ' CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = "unicode61'
        " remove_diacritics 2 categories 'L* N* Co Sm So' separators '+<=>|~'\");"
        " CREATE VIRTUAL TABLE entries_vocab USING fts5vocab ('entries_fts', 'row');"
        # Padded so that the old copy takes most of the file, as on a real index.
        " INSERT INTO entries_fts (rowid, text)"
        "   SELECT pk, 'old copy of the text ' || pk || printf('%.*c', 3000, 'x') FROM entries;"
        " DELETE FROM meta WHERE key = 'search_terms_rows';"
        # 0012 recreated entries_fts after 0007: neither was applied yet.
        " DELETE FROM schema_migrations WHERE name LIKE '0007%' OR name LIKE '0012%'"
    )
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()


def test_an_index_of_the_previous_schema_is_upgraded_in_place(agent_dir):
    for number in range(30):
        _session(agent_dir, f"s{number}", *[f"session {number} line {n} " * 40 for n in range(40)])
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    db = agent_dir / "index.db"
    _as_of_0006(db)
    with SessionIndex.open(str(agent_dir)) as index:
        # Pad the old copy so that it takes most of the file, as on a real index.
        index.connection.execute("UPDATE entries_fts SET text = text || printf('%.*c', 3000, 'x')")
        index.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = db.stat().st_size
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "sync", "--json"])
    assert result.exit_code == 0, result.output
    assert "Upgrading index.db (0012_search_for_sqlite_3_40: search text indexed again)" in (
        result.stderr
    )
    report = json.loads(result.stdout)
    assert report["files_reindexed"] == 30
    assert report["resync_reason"].startswith("0012_search_for_sqlite_3_40")
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.pending_upgrade() is None
        assert index.connection.execute("SELECT text FROM entries_fts LIMIT 1").fetchall() == [
            (None,)
        ]
        assert index.search("old copy") == []
        assert [hit.session_id for hit in index.search('"session 7 line 3"', limit=1)] == ["s7"]
        assert index.verify().clean
    assert db.stat().st_size < before / 2, "the old copy's pages were not given back"
    again = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "sync", "--json"])
    assert json.loads(again.stdout)["resync_reason"] is None
    assert "Upgrading" not in again.stderr


def test_a_reader_of_an_index_not_yet_upgraded_is_told_to_sync(agent_dir):
    _session(agent_dir, "one", "hello")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    _as_of_0006(agent_dir / "index.db")
    result = CliRunner().invoke(
        cli, ["--agent-dir", str(agent_dir), "--no-sync", "search", "hello"]
    )
    assert result.exit_code == 1
    assert result.stderr.strip().endswith(
        "was written by an older xcsh-store (it lacks schema 0012_search_for_sqlite_3_40);"
        " run `xcsh-store sync` to upgrade it"
    )
    assert len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(IndexDatabaseError, match="run `xcsh-store sync`"):
        SessionIndex.open(str(agent_dir), read_only=True)


def test_a_new_index_is_not_said_to_be_upgraded(agent_dir):
    _session(agent_dir, "one", "hello")
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "sync"])
    assert result.exit_code == 0 and "Upgrading" not in result.stderr


def test_a_read_verb_upgrades_an_old_index_with_the_sync_it_runs_first(agent_dir):
    _session(agent_dir, "one", "hello")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    _as_of_0006(agent_dir / "index.db")
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), "search", "hello", "--json"])
    assert result.exit_code == 0, result.stderr
    assert [hit["session_id"] for hit in json.loads(result.stdout)] == ["one"]


def test_a_new_index_first_sync_reports_no_resync_reason(agent_dir: Path, real_home):
    """A new index's migrations ask for a resync (0012), which its first sync is anyway: no
    reason to report, no "Upgrading" line; an upgraded index's sync reports one (above)."""
    result = CliRunner().invoke(cli, ["sync", "--init", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["files_reindexed"] > 0 and report["resync_reason"] is None
    assert "Upgrading" not in result.stderr
