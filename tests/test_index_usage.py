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


def test_usage_entries_ranks_the_keys_once_and_reads_them_first(agent_dir, index):
    # Migration 0019: the ranked keys are computed once for both halves of the view, and each
    # half reads them first; a condition on a session's column (agent = ?) must not turn the
    # plan into a loop over sessions that searches the ranked keys for each.
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
        assert plan.count("MATERIALIZE ranked") == 1, plan
        assert plan.count("SCAN r") == 2, plan
        assert not [step for step in plan if step.startswith("SEARCH r")], plan
