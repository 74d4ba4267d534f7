"""Property: whatever a session went through, reopening its file gives the same session."""

from __future__ import annotations

import tempfile

from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from manager_helpers import assistant, user

from xcsh_store import SessionManager

TEXT = st.text(min_size=0, max_size=30)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("user"), TEXT),
        st.tuples(st.just("assistant"), TEXT),
        st.tuples(st.just("custom"), TEXT),
        st.tuples(st.just("thinking"), st.sampled_from(["off", "low", "high", None])),
        st.tuples(st.just("label"), st.one_of(st.none(), TEXT)),
        st.tuples(st.just("branch"), st.integers(min_value=0)),
        st.tuples(st.just("summary"), st.integers(min_value=0)),
        st.tuples(st.just("reset"), st.none()),
        st.tuples(st.just("name"), TEXT),
    ),
    max_size=40,
)


def apply(manager: SessionManager, kind: str, value: object) -> None:
    ids = [entry["id"] for entry in manager.get_entries()]
    if kind == "user":
        manager.append_message(user(value))
    elif kind == "assistant":
        manager.append_message(assistant(value))
    elif kind == "custom":
        manager.append_custom_entry("ext", {"v": value})
    elif kind == "thinking":
        manager.append_thinking_level_change(value)
    elif kind == "label" and ids:
        manager.append_label_change(ids[len(value or "") % len(ids)], value)
    elif kind == "branch" and ids:
        manager.branch(ids[value % len(ids)])
    elif kind == "summary":
        manager.branch_with_summary(ids[value % len(ids)] if ids else None, f"summary {value}")
    elif kind == "reset":
        manager.reset_leaf()
    elif kind == "name":
        manager.set_session_name(value, "user")


def tree_shape(manager: SessionManager) -> list:
    def shape(node):  # type: ignore[no-untyped-def]
        return (node.entry["id"], node.label, [shape(child) for child in node.children])

    return [shape(node) for node in manager.get_tree()]


@settings(max_examples=examples(60), deadline=None)
@given(OPERATIONS)
def test_reopening_gives_the_same_session(operations: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        manager = SessionManager.create("/work/p", session_dir=folder)
        manager.append_message(assistant("first answer"))
        for kind, value in operations:
            apply(manager, kind, value)
        manager.close()
        reopened = SessionManager.open(manager.get_session_file())
        assert reopened.get_entries() == manager.get_entries()
        assert reopened.get_header() == manager.get_header()
        assert reopened.get_session_name() == manager.get_session_name()
        assert reopened.get_usage_statistics() == manager.get_usage_statistics()
        assert tree_shape(reopened) == tree_shape(manager)
        leaf = reopened.get_entries()[-1]["id"]
        manager.branch(leaf)
        assert reopened.build_session_context() == manager.build_session_context()
