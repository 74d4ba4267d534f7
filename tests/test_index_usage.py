"""Token usage and cost from the index, each entry counted once across forks."""

from __future__ import annotations

import pytest
from session_builder import header, message, sessions_dir, write_session


def test_usage_counts_each_entry_once(agent_dir, index):
    folder = sessions_dir(agent_dir)
    records = [
        header("orig"),
        message("u1", None, "user", "q"),
        message("a1", "u1", "assistant", "r"),
    ]
    write_session(folder / "orig.jsonl", records)
    fork_header = header("fork", timestamp="2026-02-01T00:00:00.000Z", parentSession="orig")
    fork = [fork_header, *records[1:], message("a2", "a1", "assistant", "more")]
    write_session(folder / "fork.jsonl", fork)
    index.sync()
    (by_model,) = index.usage(by="model")
    assert by_model.key == "anthropic/claude-test"
    assert (by_model.entries, by_model.input_tokens, round(by_model.cost, 6)) == (2, 20, 0.6)
    by_session = {row.key: row.entries for row in index.usage(by="session")}
    assert by_session == {"orig": 1, "fork": 1}
    assert sum(row.entries for row in index.usage(by="day")) == 2
    assert index.usage(by="month", since="2030-01-01") == []
    with pytest.raises(ValueError):
        index.usage(by="galaxy")


def test_usage_entries_reads_the_stored_ranks_first(agent_dir, index):
    # Migration 0020: the view sorts nothing (the ranks are stored), and each half reads them
    # first; a condition on a session's column (agent = ?) must not turn the plan into a loop
    # over sessions that searches the ranks for each; a session's rows are found by its index.
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "one.jsonl",
        [header("one"), message("u1", None, "user", "q"), message("a1", "u1", "assistant", "r")],
    )
    index.sync()
    for condition in ("agent = 'claude'", "session_id = 'one'", "timestamp >= '2026'"):
        plan = [
            row[3]
            for row in index.connection.execute(
                f"EXPLAIN QUERY PLAN SELECT sum(cost) FROM usage_entries WHERE {condition}"
            )
        ]
        assert not [step for step in plan if "MATERIALIZE" in step or "TEMP B-TREE" in step]
        reads = [step for step in plan if step.startswith(("SCAN", "SEARCH"))]
        assert [reads[0], reads[3]] == [
            "SEARCH r USING INTEGER PRIMARY KEY (rowid>?)",
            "SEARCH r USING INTEGER PRIMARY KEY (rowid<?)",
        ], plan
    plan = [
        row[3]
        for row in index.connection.execute(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM usage_entries WHERE session = 1"
        )
    ]
    assert [step for step in plan if step.startswith("SEARCH r")] == [
        "SEARCH r USING INDEX usage_ranks_session (session=? AND rowid>?)",
        "SEARCH r USING INDEX usage_ranks_session (session=? AND rowid<?)",
    ], plan
