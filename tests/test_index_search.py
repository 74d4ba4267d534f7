"""Full-text search through the index: filters, ranking, query parsing, prefix words, and
query text that never breaks it."""

from __future__ import annotations

import pytest
from session_builder import copy_fixtures, header, message, sessions_dir, write_session

from xcsh_store.errors import SearchQueryError
from xcsh_store.index.read.search import parse_search_query


def test_search_filters_and_ranking(agent_dir, index):
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "x.jsonl",
        [header("x"), message("u1", None, "user", "deploy the kubernetes cluster"),
         message("a1", "u1", "assistant", "kubernetes kubernetes kubernetes is deployed")],
    )  # fmt: skip
    write_session(
        folder / "y.jsonl",
        [header("y", cwd="/elsewhere"), message("u1", None, "user", "kubernetes once")],
    )
    index.sync()
    hits = index.search("kubernetes")
    assert hits[0].entry_id == "a1" and hits[0].session_id == "x"
    assert {(hit.session_id, hit.entry_id) for hit in hits} == {
        ("x", "u1"),
        ("x", "a1"),
        ("y", "u1"),
    }
    assert [hit.entry_id for hit in index.search("kubernetes", role="user", cwd="/elsewhere")] == [
        "u1"
    ]
    assert [hit.session_id for hit in index.search("kube")] != []
    assert index.search("kubernetes -deployed", role="assistant") == []
    assert [hit.entry_id for hit in index.search('"deploy the"')] == ["u1"]
    assert [hit.model for hit in index.search("deployed")] == ["claude-test"]
    assert index.search("kubernetes", since="2099-01-01") == []
    assert index.on_active_branch(hits[0])


@pytest.mark.parametrize(
    "query",
    ['"', '"unbalanced', "a*", "AND", "OR NOT", "NEAR(a b)", "-", "--", "col:val", "^x", "(", ")",
     "'; DROP TABLE entries; --", "x OR 1=1", "\\", "\x00", "*", "{a b}", "a + b", "👍", ""],
)  # fmt: skip
def test_no_query_text_breaks_search(agent_dir, index, query):
    copy_fixtures(agent_dir)
    index.sync()
    if parse_search_query(query).terms:
        index.search(query)
    else:
        with pytest.raises(SearchQueryError):
            index.search(query)
    index.history_search(query)
    assert index.connection.execute("SELECT count(*) FROM entries").fetchall()[0][0] > 0


def test_query_parsing():
    assert parse_search_query("hello world").match == '"hello" AND "world"*'
    assert parse_search_query('"exact phrase" x').match == '"exact phrase" AND "x"*'
    assert parse_search_query('x "exact phrase"').match == '"x" AND "exact phrase"'
    assert parse_search_query("a -b -c").match == '("a"*) NOT "b" NOT "c"'
    assert parse_search_query('say "hi').match == '"say" AND "hi"'
    assert parse_search_query('a"b').match == '"a""b"*'
    assert parse_search_query("-only").match is None


def test_prefix_word_expands_to_its_common_completions():
    parsed = parse_search_query("deploy kube")
    assert parsed.expression(["kube", "kubernetes"]) == '"deploy" AND ("kube" OR "kubernetes")'
    assert parsed.expression([]) is None


def test_prefix_search_finds_completions(agent_dir, index):
    write_session(
        sessions_dir(agent_dir) / "p.jsonl",
        [header("p"), message("u1", None, "user", "Kubernetes rollout"),
         message("u2", "u1", "user", "Kübelet restart")],
    )  # fmt: skip
    index.sync()
    assert {hit.entry_id for hit in index.search("kub")} == {"u1", "u2"}
    assert [hit.snippet for hit in index.search("rollout kube")] == ["[Kubernetes] [rollout]"]
