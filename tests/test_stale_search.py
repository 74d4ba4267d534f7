"""Search rows of entries that are gone (index/write/stale_search.py): entries_fts without
contentless_delete (migration 0012) keeps the row of an entry whose file was rewritten,
truncated or deleted; nothing shows it, it is counted, and once such rows are a tenth of the
indexed texts a sync deletes them, leaving the full-text index as a fresh sync of the same files
would have built it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest
from session_builder import append, copy_fixtures, header, message, sessions_dir, write_session

from xcsh_store.index import SessionIndex
from xcsh_store.index.model import search_rows
from xcsh_store.index.write import stale_search


def _session(agent_dir: Path, name: str, *texts: str) -> Path:
    records = [header(name)]
    parent = None
    for number, text in enumerate(texts):
        records.append(message(f"{name}-{number}", parent, "user", text))
        parent = f"{name}-{number}"
    return write_session(sessions_dir(agent_dir) / f"{name}.jsonl", records)


def _terms(index: SessionIndex) -> set[str]:
    return {row[0] for row in index.connection.execute("SELECT term FROM entries_vocab")}


def _stale_rows(index: SessionIndex) -> int:
    sql = f"SELECT count(*) FROM ({stale_search.STALE_ROWS})"
    return index.connection.execute(sql).fetchall()[0][0]


def test_rows_of_gone_entries_are_counted_hidden_and_deleted_at_a_tenth(agent_dir, index):
    for number in range(20):
        _session(agent_dir, f"s{number}", f"common words{number}", f"more common{number}")
    doomed = [_session(agent_dir, name, f"{name}word here", "common") for name in ("x", "y", "z")]
    index.sync()
    doomed[0].unlink()
    _session(agent_dir, "y", "rewritten text")  # the file is written anew: its old rows go
    index.sync()
    # 4 of 46 texts: stale, not yet deleted.
    assert search_rows.stale_count(index.connection) == 4 == _stale_rows(index)
    assert {"xword", "yword"} <= _terms(index)
    assert index.search("xword") == [] and index.search("yword") == []
    assert len(index.search("common", limit=100)) == 41
    assert [hit.entry_id for hit in index.search("rewritten")] == ["y-0"]
    assert index.verify().clean
    doomed[2].unlink()  # 6 of 46: over a tenth
    index.sync()
    assert search_rows.stale_count(index.connection) == 0 == _stale_rows(index)
    assert not {"xword", "yword", "zword"} & _terms(index)
    assert index.verify().clean


def test_stale_rows_that_rank_first_do_not_crowd_out_the_hits(agent_dir, index):
    """The newest and best matches are stale: search still finds as many hits as asked for."""
    for number in range(10):
        _session(agent_dir, f"old{number}", *[f"common word{n}" for n in range(30)])
    gone = _session(agent_dir, "gone", *["common common common"] * 25)
    index.sync()
    gone.unlink()
    index.sync()
    assert search_rows.stale_count(index.connection) == 25  # below a tenth of 325
    hits = index.search("common", limit=10)
    assert len(hits) == 10 and all(hit.session_id.startswith("old") for hit in hits)
    assert len(index.search("common", limit=10, project="/work/demo")) == 10


def test_an_entry_replaced_by_a_later_line_leaves_its_row_behind(agent_dir, index):
    """The same id again, appended: the later line wins, and the first one's row is stale."""
    path = _session(agent_dir, "one", *[f"line{number} words" for number in range(30)])
    index.sync()
    append(path, message("one-3", "one-29", "user", "replacement words"))
    index.sync()
    assert search_rows.stale_count(index.connection) == 1 == _stale_rows(index)
    assert index.search("line3") == []
    assert [hit.entry_id for hit in index.search("replacement")] == ["one-3"]
    assert index.verify().clean


def test_a_stale_row_keeps_its_key_from_being_used_again(agent_dir, index):
    gone = _session(agent_dir, "gone", "ghostly words")
    index.sync()
    (highest,) = index.connection.execute("SELECT max(pk) FROM entries").fetchall()[0]
    gone.unlink()
    _session(agent_dir, "kept", *["other words"] * 20)
    index.sync()
    assert _stale_rows(index) == 1
    new_keys = [row[0] for row in index.connection.execute("SELECT pk FROM entries")]
    assert min(new_keys) > highest
    assert index.search("ghostly") == []


def _postings(index: SessionIndex) -> dict[str, Any]:
    """The full-text index by what each row stands for (path and line), and its totals: keys
    differ between two indexes of the same files."""
    connection = index.connection
    connection.execute(
        "CREATE VIRTUAL TABLE temp.instances USING fts5vocab (main, entries_fts, instance)"
    )
    try:
        entry = "(SELECT path FROM files WHERE id = e.session), e.seq"
        return {
            "postings": connection.execute(
                f"SELECT {entry}, i.term, i.offset FROM temp.instances AS i"
                " LEFT JOIN entries AS e ON e.pk = i.doc ORDER BY 1, 2, 3, 4"
            ).fetchall(),
            "sizes": connection.execute(
                f"SELECT {entry}, d.sz FROM entries_fts_docsize AS d"
                " LEFT JOIN entries AS e ON e.pk = d.id ORDER BY 1, 2"
            ).fetchall(),
            "totals": connection.execute(
                "SELECT block FROM entries_fts_data WHERE id = 1"
            ).fetchall(),
        }
    finally:
        connection.execute("DROP TABLE temp.instances")


def test_deleted_stale_rows_leave_the_index_a_fresh_sync_would_build(
    agent_dir, tmp_path, monkeypatch
):
    """The real sessions (every script, symbol and emoji they hold): rows deleted with the
    terms read back from the index are gone to the last token and the totals."""
    monkeypatch.setattr(stale_search, "STALE_SHARE", 2.0)  # the sync leaves them all
    paths = sorted(copy_fixtures(agent_dir), key=lambda path: path.stat().st_size)
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        for path in paths[::3]:
            path.unlink()
        for path in paths[1::3]:
            lines = path.read_bytes().splitlines(keepends=True)
            path.write_bytes(b"".join(lines[: len(lines) // 2]))
        index.sync()
        assert stale_search.delete_stale_rows(index.connection) > 0
        assert _stale_rows(index) == 0 and search_rows.stale_count(index.connection) == 0
        index.connection.execute(
            "INSERT INTO entries_fts (entries_fts, rank) VALUES ('integrity-check', 1)"
        )
        ours = _postings(index)
    with SessionIndex.open(str(agent_dir), db_path=str(tmp_path / "fresh.db")) as fresh:
        fresh.sync()
        theirs = _postings(fresh)
    assert ours["postings"] and (None, None) not in {row[:2] for row in ours["postings"]}
    assert ours == theirs


def test_a_full_sync_starts_the_search_rows_afresh(agent_dir, index):
    for number in range(10):
        _session(agent_dir, f"s{number}", f"text{number} words")
    index.sync()
    _session(agent_dir, "s0", "replaced")
    index.sync(full=True)
    assert _stale_rows(index) == 0
    assert "text0" not in _terms(index)
    ((rows,),) = index.connection.execute("SELECT count(*) FROM entries_fts_docsize").fetchall()
    assert rows == 10
    assert index.pending_upgrade() is None


def test_a_full_sync_killed_part_way_is_finished_in_full_by_the_next(agent_dir, monkeypatch):
    """The full sync emptied entries_fts: files it had not read yet must be read by the next
    sync too, though they have not changed."""
    for number in range(6):
        _session(agent_dir, f"s{number}", f"text{number} words")
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    from xcsh_store.index.write.stages import read

    original = read.FileIndexer.index
    calls = []

    def die_on_the_third(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(args)
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")
        original(self, *args, **kwargs)

    monkeypatch.setattr(read.FileIndexer, "index", die_on_the_third)
    with SessionIndex.open(str(agent_dir)) as index, pytest.raises(KeyboardInterrupt):
        index.sync(full=True, workers=1)
    monkeypatch.undo()
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.pending_upgrade() == "a full sync had not finished"
        report = index.sync()
        assert report.files_reindexed == 6
        assert [hit.session_id for hit in index.search("text5")] == ["s5"]
        assert index.verify().clean


def test_verify_tells_a_wrong_count_and_repair_deletes_the_rows(agent_dir, index):
    for number in range(20):
        _session(agent_dir, f"s{number}", f"text{number}")
    index.sync()
    (agent_dir / "sessions" / "--work-demo--" / "s3.jsonl").unlink()
    index.sync()
    assert _stale_rows(index) == 1
    index.connection.execute("UPDATE meta SET value = '7' WHERE key = 'stale_search_rows'")
    report = index.verify()
    assert report.search_errors == ["search: 1 indexed texts belong to no entry, 7 were counted"]
    index.verify(repair=True)
    assert _stale_rows(index) == 0 and search_rows.stale_count(index.connection) == 0
    assert index.verify().clean


def test_the_search_rows_of_a_damaged_counter_are_found_afresh(agent_dir, index):
    """A stale row that was never counted (a damaged or older index) is deleted all the same."""
    for number in range(4):
        _session(agent_dir, f"s{number}", f"text{number}")
    index.sync()
    index.connection.execute("INSERT INTO entries_fts (rowid, text) VALUES (999999, 'ghost')")
    assert stale_search.delete_stale_rows(index.connection) == 1
    assert "ghost" not in _terms(index)


def test_the_terms_of_any_text_delete_its_row_exactly():
    """Every term read back from the index tokenizes to itself: a row of any text, deleted with
    them, leaves nothing behind (combining marks, symbols, scripts, private use, case folds)."""
    connection = apsw.Connection(":memory:")
    from xcsh_store.index.db import apply_migrations, load_migrations

    apply_migrations(connection, load_migrations())
    samples = [
        "Ünïcödé façade ŉ ß İstanbul ǅ ﬁ",
        "→ ≥ × ✅ 🎉 👩🏽‍💻 °C",
        "a\u0301 e\u0308 \u20ac5",
        "日本語のテキスト 中文 한국어",
        "\ue000\uf8ff private",
        "x=1 a+b <div> ~/src a|b",
        "",
        "   ",
        "---",
        "Σίσυφος ΣΊΣΥΦΟΣ",
        "ﾊﾝｶｸ Ａｂｃ",
        "\u0130\u0131 \u1e9e",
    ]
    for number, text in enumerate(samples, 1):
        connection.execute("INSERT INTO entries_fts (rowid, text) VALUES (?, ?)", (number, text))
    assert stale_search.delete_stale_rows(connection) == len(samples)
    assert connection.execute("SELECT count(*) FROM entries_vocab").fetchall() == [(0,)]
    assert connection.execute("SELECT count(*) FROM entries_fts_docsize").fetchall() == [(0,)]
    totals = connection.execute("SELECT block FROM entries_fts_data WHERE id = 1").fetchall()
    assert totals == [(b"\x00\x00",)]
