"""A session's tree in the index: branches, duplicate ids, parent cycles, chains and parent
links."""

from __future__ import annotations

import pytest
from session_builder import append, copy_fixtures, header, message, sessions_dir, write_session
from store_checks import assert_every_leaf_context_matches

from xcsh_store.errors import EntryNotFoundError
from xcsh_store.index.model.paths import ChainPath, ListPath, entry_path


def test_branch_and_tree(agent_dir, index):
    path = sessions_dir(agent_dir) / "t.jsonl"
    write_session(
        path,
        [header("tree"), message("r", None, "user", "root"), message("a", "r", "assistant", "A"),
         message("b", "r", "assistant", "B"), message("c", "b", "user", "C")],
    )  # fmt: skip
    index.sync()
    assert [row.id for row in index.branch("tree")] == ["r", "b", "c"]
    assert [row.id for row in index.branch("tree", "a")] == ["r", "a"]
    tree = index.tree("tree")
    assert tree.roots == ["r"]
    assert tree.children["r"] == ["a", "b"]
    assert sorted(tree.leaves) == ["a", "c"]
    assert tree.branch_points == ["r"]
    with pytest.raises(EntryNotFoundError):
        index.branch("tree", "nope")
    entries = index.branch_entries("tree", "a")
    assert [entry["message"]["content"][0]["text"] for entry in entries] == ["root", "A"]


def test_duplicate_ids_the_later_line_wins(agent_dir, index):
    path = sessions_dir(agent_dir) / "dup.jsonl"
    write_session(
        path,
        [
            header("dup"),
            message("x", None, "user", "first version"),
            message("x", None, "user", "second version"),
        ],
    )
    index.sync()
    assert [hit.snippet for hit in index.search("version")] == ["second [version]"]
    append(path, message("x", None, "user", "third version"))
    index.sync()
    assert [hit.snippet for hit in index.search("version")] == ["third [version]"]
    assert index.verify().clean


def test_parent_cycles_do_not_hang(agent_dir, index):
    write_session(
        sessions_dir(agent_dir) / "cycle.jsonl",
        [header("cycle"), message("a", "b", "user", "one"), message("b", "a", "user", "two"),
         message("c", "c", "user", "self")],
    )  # fmt: skip
    index.sync()
    assert [row.id for row in index.branch("cycle", "b")] == ["a", "b"]
    assert [row.id for row in index.branch("cycle", "c")] == ["c"]
    assert sorted(index.tree("cycle").roots) == ["c"]
    assert_every_leaf_context_matches(index)


def test_well_formed_sessions_are_followed_by_chains_and_odd_ones_by_parent_links(agent_dir, index):
    copy_fixtures(agent_dir)
    write_session(
        sessions_dir(agent_dir) / "late.jsonl",
        [header("late"), message("b", "a", "user", "child first"), message("a", None, "user", "x")],
    )
    index.sync()
    kinds = {}
    for session in index.list_sessions():
        if session.last_entry_id is not None and not session.legacy:
            path = entry_path(index.connection, session.file_id, session.last_entry_id)
            kinds[session.session_id] = type(path)
    # A child written before its parent is walked by parent links; every fixture by chains
    # (kuato's pi-session names a parent that never appears: a root, still chained).
    assert kinds.pop("late") is ListPath
    assert len(kinds) == 20
    assert all(kind is ChainPath for kind in kinds.values())
    assert [row.id for row in index.branch("late", "b")] == ["a", "b"]
    assert_every_leaf_context_matches(index)
