"""SessionManager in memory: the tree, appends, labels, navigation, context, usage, naming."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import orjson
import pytest
from manager_helpers import assistant, user

from xcsh_store import EntryNotFoundError, SessionManager, SessionTreeNode
from xcsh_store.session.manager import sanitize_session_name

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


@pytest.fixture
def session() -> SessionManager:
    return SessionManager.in_memory("/work/project")


def write_session(path: Path, *records: dict) -> Path:
    path.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    return path


HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2026-01-01T00:00:00.000Z"}


def entry(entry_id: str, parent: str | None, second: int = 0, **fields) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "message": fields.pop("message", user(entry_id)),
        **fields,
    }


# --------------------------------------------------------------------------------------------
# The tree


def test_first_append_is_a_root_and_each_append_becomes_the_leaf(session: SessionManager) -> None:
    first = session.append_message(user("one"))
    second = session.append_message(assistant())
    assert session.get_entry(first)["parentId"] is None
    assert session.get_entry(second)["parentId"] == first
    assert session.get_leaf_id() == second
    assert session.get_leaf_entry() is session.get_entry(second)


def test_entry_ids_are_eight_hex_digits_and_unique(session: SessionManager) -> None:
    ids = [session.append_custom_entry("tick") for _ in range(2000)]
    assert len(set(ids)) == 2000
    assert all(re.fullmatch(r"[0-9a-f]{8}", entry_id) for entry_id in ids)


def test_entries_carry_an_iso_timestamp(session: SessionManager) -> None:
    entry_id = session.append_message(user("x"))
    assert ISO.match(session.get_entry(entry_id)["timestamp"])


def test_get_entries_returns_insertion_order_without_the_header(session: SessionManager) -> None:
    ids = [session.append_message(user(str(n))) for n in range(3)]
    assert [entry["id"] for entry in session.get_entries()] == ids
    assert session.get_header()["type"] == "session"


def test_get_entries_is_a_copy_of_the_list(session: SessionManager) -> None:
    session.append_message(user("x"))
    session.get_entries().clear()
    assert len(session.get_entries()) == 1


def test_reset_leaf_makes_the_next_append_a_new_root(session: SessionManager) -> None:
    session.append_message(user("a"))
    session.reset_leaf()
    assert session.get_leaf_id() is None
    assert session.get_leaf_entry() is None
    second_root = session.append_message(user("b"))
    assert session.get_entry(second_root)["parentId"] is None


def test_branch_moves_the_leaf_only(session: SessionManager) -> None:
    first = session.append_message(user("a"))
    session.append_message(assistant())
    session.branch(first)
    assert session.get_leaf_id() == first
    assert len(session.get_entries()) == 2
    child = session.append_message(user("b"))
    assert session.get_entry(child)["parentId"] == first


def test_branch_to_an_unknown_entry_raises_entry_not_found(session: SessionManager) -> None:
    with pytest.raises(EntryNotFoundError) as caught:
        session.branch("nope")
    assert str(caught.value) == "Entry nope not found"
    assert isinstance(caught.value, KeyError)


def test_header_of_a_new_session(session: SessionManager) -> None:
    header = session.get_header()
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["version"] == 3
    assert header["cwd"] == "/work/project"
    assert re.fullmatch(r"[0-9a-f]{16}", header["id"])
    assert session.get_session_id() == header["id"]


def test_new_session_with_parent_puts_parent_session_last(session: SessionManager) -> None:
    session.new_session(parent_session="/old/file.jsonl")
    header = session.get_header()
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert header["parentSession"] == "/old/file.jsonl"


def test_new_session_starts_empty(session: SessionManager) -> None:
    old_id = session.get_session_id()
    session.append_message(assistant())
    assert session.new_session() is None
    assert session.get_entries() == []
    assert session.get_leaf_id() is None
    assert session.get_session_id() != old_id
    assert session.get_usage_statistics()["input"] == 0


# --------------------------------------------------------------------------------------------
# Append methods: fields and key order (compatibility: Session file format as in the reference)


def keys_of(session: SessionManager, entry_id: str) -> list[str]:
    return list(session.get_entry(entry_id))


def test_message_entry_key_order(session: SessionManager) -> None:
    message = user("hi")
    entry_id = session.append_message(message)
    assert keys_of(session, entry_id) == ["type", "id", "parentId", "timestamp", "message"]
    assert session.get_entry(entry_id)["message"] is message


def test_thinking_level_change_none_is_written_as_null(session: SessionManager) -> None:
    entry_id = session.append_thinking_level_change(None)
    assert session.get_entry(entry_id)["thinkingLevel"] is None
    assert keys_of(session, entry_id)[-1] == "thinkingLevel"


def test_model_change_role_is_absent_unless_given(session: SessionManager) -> None:
    plain = session.append_model_change("anthropic/claude")
    with_role = session.append_model_change("openai/o3", "smol")
    assert keys_of(session, plain) == ["type", "id", "parentId", "timestamp", "model"]
    assert session.get_entry(with_role)["role"] == "smol"


def test_compaction_fields_in_order_and_optional_ones_absent(session: SessionManager) -> None:
    kept = session.append_message(user("kept"))
    full = session.append_compaction("sum", "short", kept, 1234, {"a": 1}, True, {"x": 1})
    bare = session.append_compaction("sum", None, kept, 5)
    assert keys_of(session, full) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "shortSummary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
        "fromExtension",
        "preserveData",
    ]
    assert keys_of(session, bare)[4:] == ["summary", "firstKeptEntryId", "tokensBefore"]


def test_custom_entry_puts_its_fields_before_the_id(session: SessionManager) -> None:
    entry_id = session.append_custom_entry("ext-state", {"n": 1})
    bare = session.append_custom_entry("ext-state")
    assert keys_of(session, entry_id) == [
        "type",
        "customType",
        "data",
        "id",
        "parentId",
        "timestamp",
    ]
    assert "data" not in session.get_entry(bare)


def test_custom_message_entry_defaults_attribution_to_agent(session: SessionManager) -> None:
    entry_id = session.append_custom_message_entry("note", "text", True)
    detailed = session.append_custom_message_entry("note", "text", False, {"d": 1}, "user")
    assert keys_of(session, entry_id) == [
        "type",
        "customType",
        "content",
        "display",
        "attribution",
        "id",
        "parentId",
        "timestamp",
    ]
    assert session.get_entry(entry_id)["attribution"] == "agent"
    assert session.get_entry(detailed)["details"] == {"d": 1}
    assert session.get_entry(detailed)["attribution"] == "user"


def test_ttsr_injection_copies_the_rule_list(session: SessionManager) -> None:
    rules = ["a", "b"]
    entry_id = session.append_ttsr_injection(rules)
    rules.append("c")
    assert session.get_entry(entry_id)["injectedRules"] == ["a", "b"]


def test_session_init_fields(session: SessionManager) -> None:
    entry_id = session.append_session_init("system", "task", ["read", "bash"])
    with_schema = session.append_session_init("s", "t", [], {"type": "object"})
    assert keys_of(session, entry_id)[4:] == ["systemPrompt", "task", "tools"]
    assert session.get_entry(with_schema)["outputSchema"] == {"type": "object"}


def test_mode_change_data_is_optional(session: SessionManager) -> None:
    plain = session.append_mode_change("plan")
    with_data = session.append_mode_change("plan", {"step": 2})
    assert keys_of(session, plain)[4:] == ["mode"]
    assert session.get_entry(with_data)["data"] == {"step": 2}


# --------------------------------------------------------------------------------------------
# branch_with_summary


def test_branch_with_summary_from_an_entry(session: SessionManager) -> None:
    first = session.append_message(user("a"))
    session.append_message(assistant())
    summary_id = session.branch_with_summary(first, "what happened", {"files": []}, True)
    summary = session.get_entry(summary_id)
    assert summary["parentId"] == first
    assert summary["fromId"] == first
    assert list(summary)[4:] == ["fromId", "summary", "details", "fromExtension"]
    assert session.get_leaf_id() == summary_id


def test_branch_with_summary_from_none_starts_at_the_root(session: SessionManager) -> None:
    session.append_message(user("a"))
    summary_id = session.branch_with_summary(None, "from scratch")
    assert session.get_entry(summary_id)["parentId"] is None
    assert session.get_entry(summary_id)["fromId"] == "root"


def test_branch_with_summary_to_an_unknown_entry_appends_nothing(session: SessionManager) -> None:
    session.append_message(user("a"))
    with pytest.raises(EntryNotFoundError, match="Entry ghost not found"):
        session.branch_with_summary("ghost", "s")
    assert len(session.get_entries()) == 1


# --------------------------------------------------------------------------------------------
# Labels


def test_label_is_set_and_the_label_entry_becomes_the_leaf(session: SessionManager) -> None:
    target = session.append_message(user("a"))
    label_id = session.append_label_change(target, "checkpoint")
    assert session.get_label(target) == "checkpoint"
    assert session.get_leaf_id() == label_id
    label_entry = session.get_entry(label_id)
    assert list(label_entry) == ["type", "id", "parentId", "timestamp", "targetId", "label"]
    assert label_entry["parentId"] == target


def test_last_label_wins(session: SessionManager) -> None:
    target = session.append_message(user("a"))
    session.append_label_change(target, "first")
    session.append_label_change(target, "second")
    assert session.get_label(target) == "second"


@pytest.mark.parametrize("cleared", [None, ""])
def test_none_or_empty_label_clears(session: SessionManager, cleared: str | None) -> None:
    target = session.append_message(user("a"))
    session.append_label_change(target, "x")
    label_id = session.append_label_change(target, cleared)
    assert session.get_label(target) is None
    assert ("label" in session.get_entry(label_id)) is (cleared is not None)


def test_label_on_unknown_target_raises_before_appending(session: SessionManager) -> None:
    session.append_message(user("a"))
    leaf = session.get_leaf_id()
    with pytest.raises(EntryNotFoundError, match="Entry missing not found"):
        session.append_label_change("missing", "x")
    assert len(session.get_entries()) == 1
    assert session.get_leaf_id() == leaf


def test_labels_are_global_not_per_branch(session: SessionManager) -> None:
    root = session.append_message(user("root"))
    target = session.append_message(assistant())
    session.append_label_change(target, "kept")
    session.branch(root)
    session.append_message(user("elsewhere"))
    assert session.get_label(target) == "kept"


def label(entry_id: str, parent: str, target: str, text: str | None = None) -> dict:
    record = {"type": "label", "id": entry_id, "parentId": parent, "timestamp": "t"}
    record["targetId"] = target
    if text is not None:
        record["label"] = text
    return record


def test_labels_are_rebuilt_from_a_file(tmp_path: Path) -> None:
    path = write_session(
        tmp_path / "s.jsonl",
        HEADER,
        entry("a", None),
        label("l1", "a", "a", "x"),
        label("l2", "l1", "a", "y"),
        entry("b", "l2"),
        label("l3", "b", "b", "z"),
        label("l4", "l3", "b"),
    )
    manager = SessionManager.open(str(path))
    assert manager.get_label("a") == "y"
    assert manager.get_label("b") is None


# --------------------------------------------------------------------------------------------
# Branch, children, tree


def test_get_branch_is_root_to_leaf(session: SessionManager) -> None:
    a = session.append_message(user("a"))
    b = session.append_message(assistant())
    c = session.append_message(user("c"))
    session.branch(a)
    d = session.append_message(user("d"))
    assert [e["id"] for e in session.get_branch()] == [a, d]
    assert [e["id"] for e in session.get_branch(c)] == [a, b, c]
    assert session.get_branch("unknown") == []


def test_get_branch_of_an_empty_session_is_empty(session: SessionManager) -> None:
    assert session.get_branch() == []


def test_get_children(session: SessionManager) -> None:
    a = session.append_message(user("a"))
    b = session.append_message(user("b"))
    session.branch(a)
    c = session.append_message(user("c"))
    assert [e["id"] for e in session.get_children(a)] == [b, c]
    assert [e["id"] for e in session.get_children(None)] == [a]
    assert session.get_children(c) == []


def test_tree_children_are_sorted_by_timestamp(tmp_path: Path) -> None:
    path = write_session(
        tmp_path / "s.jsonl",
        HEADER,
        entry("root", None, 0),
        entry("late", "root", 9),
        entry("early", "root", 1),
        entry("middle", "root", 5),
    )
    tree = SessionManager.open(str(path)).get_tree()
    assert [node.entry["id"] for node in tree] == ["root"]
    assert [child.entry["id"] for child in tree[0].children] == ["early", "middle", "late"]


def test_tree_roots_include_orphans_and_self_parented_entries(tmp_path: Path) -> None:
    path = write_session(
        tmp_path / "s.jsonl",
        HEADER,
        entry("a", None, 0),
        entry("orphan", "gone", 1),
        entry("self", "self", 2),
        entry("b", "a", 3),
    )
    tree = SessionManager.open(str(path)).get_tree()
    assert [node.entry["id"] for node in tree] == ["a", "orphan", "self"]
    assert [child.entry["id"] for child in tree[0].children] == ["b"]


def test_tree_nodes_carry_labels(session: SessionManager) -> None:
    a = session.append_message(user("a"))
    label_id = session.append_label_change(a, "here")
    tree = session.get_tree()
    assert isinstance(tree[0], SessionTreeNode)
    assert tree[0].label == "here"
    assert tree[0].children[0].entry["id"] == label_id
    assert tree[0].children[0].label is None


def all_tree_ids(nodes: list[SessionTreeNode]) -> list[str]:
    found: list[str] = []
    pending = list(nodes)
    while pending:
        node = pending.pop()
        found.append(node.entry["id"])
        pending.extend(node.children)
    return found


def test_a_parent_cycle_neither_hangs_nor_loses_entries(tmp_path: Path) -> None:
    """A corrupt file whose entries point at each other (compatibility: Cycles end every walk)."""
    path = write_session(
        tmp_path / "s.jsonl",
        HEADER,
        entry("x", "y", 0),
        entry("y", "x", 1),
        entry("z", "y", 2),
    )
    manager = SessionManager.open(str(path))
    assert sorted(all_tree_ids(manager.get_tree())) == ["x", "y", "z"]
    assert [e["id"] for e in manager.get_branch("z")] == ["x", "y", "z"]
    assert [m["content"] for m in manager.build_session_context().messages] == ["x", "y", "z"]


def test_a_self_parented_leaf_does_not_hang(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", HEADER, entry("a", None), entry("self", "self", 1))
    manager = SessionManager.open(str(path))
    assert [e["id"] for e in manager.get_branch()] == ["self"]
    assert len(manager.build_session_context().messages) == 1


# --------------------------------------------------------------------------------------------
# Context


def test_context_follows_the_current_branch(session: SessionManager) -> None:
    first = session.append_message(user("question"))
    session.append_message(assistant("answer one"))
    session.branch(first)
    session.append_message(assistant("answer two"))
    messages = session.build_session_context().messages
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"][0]["text"] == "answer two"


def test_context_of_an_empty_session(session: SessionManager) -> None:
    context = session.build_session_context()
    assert context.messages == []
    assert context.thinking_level == "off"
    assert context.models == {}
    assert context.mode == "none"


def test_context_after_reset_leaf_is_empty(session: SessionManager) -> None:
    session.append_message(user("a"))
    session.reset_leaf()
    assert session.build_session_context().messages == []


def test_context_settings_come_from_the_path(session: SessionManager) -> None:
    session.append_thinking_level_change("high")
    session.append_model_change("openai/o3", "smol")
    session.append_mode_change("plan", {"step": 1})
    session.append_ttsr_injection(["r1", "r2"])
    session.append_ttsr_injection(["r2", "r3"])
    context = session.build_session_context()
    assert context.thinking_level == "high"
    assert context.models == {"smol": "openai/o3"}
    assert context.mode == "plan"
    assert context.mode_data == {"step": 1}
    assert context.injected_ttsr_rules == ["r1", "r2", "r3"]
    assert session.get_injected_ttsr_rules() == ["r1", "r2", "r3"]


def test_explicit_model_change_wins_over_the_assistant_model(session: SessionManager) -> None:
    """The assistant's provider/model is only a fallback (compatibility: Explicit model changes
    win)."""
    session.append_model_change("openai/gpt-5")
    session.append_message(assistant(provider="anthropic", model="claude"))
    assert session.build_session_context().models == {"default": "openai/gpt-5"}


def test_assistant_model_is_the_fallback_default(session: SessionManager) -> None:
    session.append_model_change("openai/o3", "smol")
    session.append_message(assistant(provider="anthropic", model="claude"))
    assert session.build_session_context().models == {
        "smol": "openai/o3",
        "default": "anthropic/claude",
    }


def test_compaction_keeps_entries_from_first_kept(session: SessionManager) -> None:
    session.append_message(user("dropped"))
    kept = session.append_message(user("kept"))
    session.append_message(assistant("kept answer"))
    session.append_compaction("the summary", "short", kept, 999)
    session.append_message(user("after"))
    messages = session.build_session_context().messages
    assert messages[0]["role"] == "compactionSummary"
    assert messages[0]["summary"] == "the summary"
    assert messages[0]["tokensBefore"] == 999
    assert messages[1]["content"] == "kept"
    assert messages[-1]["content"] == "after"
    assert len(messages) == 4


def test_branch_summary_and_custom_message_take_part_in_the_context(
    session: SessionManager,
) -> None:
    session.append_message(user("a"))
    session.branch_with_summary(None, "branch summary")
    session.append_custom_message_entry("note", "hello", True)
    session.append_custom_entry("ignored", {"x": 1})
    roles = [m["role"] for m in session.build_session_context().messages]
    assert roles == ["branchSummary", "custom"]


def test_labels_add_nothing_to_the_context(session: SessionManager) -> None:
    a = session.append_message(user("a"))
    session.append_label_change(a, "x")
    assert len(session.build_session_context().messages) == 1


# --------------------------------------------------------------------------------------------
# Usage statistics (compatibility: Usage as in the reference; Missing usage counts as zero)


def test_usage_sums_every_assistant_message_of_every_branch(session: SessionManager) -> None:
    root = session.append_message(user("q"))
    session.append_message(assistant())
    session.branch(root)
    session.append_message(assistant())
    assert session.get_usage_statistics() == {
        "input": 20,
        "output": 40,
        "cacheRead": 6,
        "cacheWrite": 8,
        "premiumRequests": 0,
        "cost": 0.6,
    }


def test_usage_counts_task_tool_results_with_usage_details(session: SessionManager) -> None:
    session.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "task",
            "content": [],
            "details": {
                "usage": {"input": 5, "output": 6, "premiumRequests": 1.5, "cost": {"total": 2}}
            },
            "isError": False,
            "timestamp": 1,
        }
    )
    session.append_message(
        {"role": "toolResult", "toolName": "bash", "details": {"usage": {"input": 100}}}
    )
    stats = session.get_usage_statistics()
    assert stats["input"] == 5
    assert stats["output"] == 6
    assert stats["premiumRequests"] == 1.5
    assert stats["cost"] == 2


def test_missing_usage_or_cost_counts_as_zero(session: SessionManager) -> None:
    session.append_message({"role": "assistant", "content": []})
    session.append_message(assistant(usage={"input": 7, "premiumRequests": 0.25}))
    stats = session.get_usage_statistics()
    assert stats == {
        "input": 7,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "premiumRequests": 0.25,
        "cost": 0,
    }


def test_usage_statistics_are_a_snapshot(session: SessionManager) -> None:
    stats = session.get_usage_statistics()
    stats["input"] = 1000
    assert session.get_usage_statistics()["input"] == 0


def test_usage_is_recomputed_on_load(tmp_path: Path) -> None:
    manager = SessionManager.create("/work/p", session_dir=str(tmp_path))
    manager.append_message(user("q"))
    manager.append_message(assistant())
    manager.append_message(assistant(usage={"input": 1, "output": 1, "cost": {"total": 0.5}}))
    manager.close()
    reopened = SessionManager.open(manager.get_session_file())
    assert reopened.get_usage_statistics() == manager.get_usage_statistics()
    assert reopened.get_usage_statistics()["cost"] == pytest.approx(0.8)


# --------------------------------------------------------------------------------------------
# Naming (compatibility: Persistence as in the reference)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("  Fix   the build  ", "Fix the build"),
        ("line one\nline two", "line one line two"),
        ("tab\there\x00and\x7fdel\x85c1", "tab here and del c1"),
        ("\u00a0nbsp edges\u3000", "nbsp edges"),
    ],
)
def test_session_name_is_sanitised(raw: str, clean: str) -> None:
    assert sanitize_session_name(raw) == clean


def test_set_session_name(session: SessionManager) -> None:
    assert session.set_session_name("  My\nsession ", "user") is True
    assert session.get_session_name() == "My session"
    assert session.title_source == "user"
    assert session.get_header()["title"] == "My session"
    assert session.get_header()["titleSource"] == "user"


def test_an_empty_name_is_refused(session: SessionManager) -> None:
    assert session.set_session_name(" \x00\n ") is False
    assert session.get_session_name() is None
    assert "title" not in session.get_header()


def test_auto_name_never_replaces_a_user_name(session: SessionManager) -> None:
    session.set_session_name("mine", "user")
    assert session.set_session_name("generated") is False
    assert session.get_session_name() == "mine"
    assert session.set_session_name("renamed", "user") is True
    assert session.get_session_name() == "renamed"


def test_auto_name_replaces_an_auto_name(session: SessionManager) -> None:
    session.set_session_name("first")
    assert session.set_session_name("second") is True
    assert session.get_session_name() == "second"
    assert session.title_source == "auto"


# --------------------------------------------------------------------------------------------
# In-memory sessions


def test_in_memory_session_has_no_file_and_no_artifact_folder(session: SessionManager) -> None:
    assert session.is_persisted() is False
    assert session.get_session_file() is None
    assert session.get_session_dir() == ""
    assert session.get_artifacts_dir() is None
    assert session.fork() is None
    assert session.allocate_artifact_path("bash") is None


def test_in_memory_artifacts_get_counting_ids_but_no_path(session: SessionManager) -> None:
    assert session.save_artifact("out 1", "bash") == "0"
    assert session.save_artifact("out 2", "bash") == "1"
    assert session.get_artifact_path("0") is None


def test_in_memory_branched_session_replaces_the_entries(session: SessionManager) -> None:
    a = session.append_message(user("a"))
    session.append_message(assistant())
    session.set_session_name("kept in memory", "user")
    old_id = session.get_session_id()
    assert session.create_branched_session(a) is None
    assert [e["id"] for e in session.get_entries()] == [a]
    assert session.get_session_id() != old_id
    assert "parentSession" not in session.get_header()
    # Like the reference: the name survives in memory, the new header has none.
    assert session.get_session_name() == "kept in memory"
    assert "title" not in session.get_header()


def test_in_memory_move_changes_the_cwd_only(session: SessionManager) -> None:
    session.move_to("/elsewhere/../other")
    assert session.get_cwd() == "/other"
    assert session.get_header()["cwd"] == "/other"
    assert session.get_session_file() is None


def test_in_memory_default_cwd_is_the_process_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    assert SessionManager.in_memory().get_cwd() == "/"


def open_descriptors_of(path: str) -> int:
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{name}") == path
    return count


def test_context_manager_closes_the_file(tmp_path: Path) -> None:
    with SessionManager.create("/p", session_dir=str(tmp_path)) as manager:
        manager.append_message(assistant())
        manager.append_message(user("more"))
        assert open_descriptors_of(manager.get_session_file()) == 1
    assert open_descriptors_of(manager.get_session_file()) == 0


def test_blobs_and_breadcrumbs_go_to_the_agent_dir_of_the_session_folder(tmp_path, agent_dir):
    other_agent = tmp_path / "other-agent"
    session_dir = other_agent / "sessions" / "--work--"
    manager = SessionManager.create("/work", str(session_dir))
    image = {"type": "image", "data": "A" * 2048, "mimeType": "image/png"}
    manager.append_message({"role": "user", "content": [image]})
    manager.append_message(assistant("seen"))
    manager.close()
    assert len(list((other_agent / "blobs").iterdir())) == 1
    assert (other_agent / "terminal-sessions" / "pytest-terminal").exists()
    assert not (agent_dir / "blobs").exists()
