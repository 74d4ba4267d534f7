"""pi's own entry forms, assistant messages without a model, the key order of the context's
models, and session arguments that match several files.

(compatibility: pi's model_change form; pi's session_info names the session; Assistant messages
without a model; Ambiguous session lookups are errors)
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from session_builder import PI_FIXTURES, append, header, message, sessions_dir, write_session

import xcsh_store
from xcsh_store.cli import cli
from xcsh_store.errors import (
    AmbiguousSessionError,
    EntryNotFoundError,
    SessionNotFoundError,
    XcshStoreError,
)
from xcsh_store.format.context import build_session_context
from xcsh_store.format.loader import load_session
from xcsh_store.format.versions import find_header_index, synthetic_ids_for
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify as dumps
from xcsh_store.session.discovery import list_all_sessions


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


# --------------------------------------------------------------------------------------------
# The rules stated on their own, to check the store against (compatibility: Explicit model
# changes win; Assistant messages without a model; pi's model_change form)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _change_model(entry: dict[str, Any]) -> Any:
    """What a model_change sets: a truthy ``model``, or pi's provider/modelId pair."""
    if entry.get("model"):
        return entry["model"]
    provider, model_id = _text(entry.get("provider")), _text(entry.get("modelId"))
    if entry.get("model") is None and provider and model_id:
        return f"{provider}/{model_id}"
    return None


def _named_assistant(entry: dict[str, Any]) -> str | None:
    message = entry.get("message")
    if entry.get("type") != "message" or type(message) is not dict:
        return None
    if message.get("role") != "assistant":
        return None
    provider, model = _text(message.get("provider")), _text(message.get("model"))
    return f"{provider}/{model}" if provider and model else None


def expected_models(path: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The models of a root -> leaf path as (role, model) in the reference's key order.

    A role's key sits where it first appears; ``default`` first appears at the first default
    model change or the first assistant message naming a provider and a model. Each role's value
    is its last change; ``default`` falls back to the last such assistant message only when no
    model change with role default is on the path.
    """
    changes = [
        (place, entry.get("role") or "default", _change_model(entry))
        for place, entry in enumerate(path)
        if entry.get("type") == "model_change" and _change_model(entry) is not None
    ]
    named = [
        (place, _named_assistant(entry))
        for place, entry in enumerate(path)
        if _named_assistant(entry) is not None
    ]
    first_seen: dict[str, int] = {}
    for place, role, _ in changes:
        first_seen.setdefault(role, place)
    if named:
        first_seen["default"] = min(first_seen.get("default", named[0][0]), named[0][0])
    value = {role: model for _, role, model in changes}
    if "default" not in value and named:
        value["default"] = named[-1][1]
    return [(role, value[role]) for role in sorted(first_seen, key=first_seen.__getitem__)]


def path_to(entry: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    path, seen = [entry], {id(entry)}
    while isinstance(entry.get("parentId"), str) and entry["parentId"] in by_id:
        entry = by_id[entry["parentId"]]
        if id(entry) in seen:
            break
        seen.add(id(entry))
        path.append(entry)
    return path[::-1]


def expected_title(records: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """(title, source): the newest title_change with a title on the path of the last entry
    (its source, else user), then the last session_info naming the session, then the header's
    title, a leading title record's, the newest compaction summary (compatibility: oh-my-pi's
    title_change renames the session; pi's session_info names the session; Title records before
    the header)."""
    start = find_header_index(records)
    body = records[start + 1 :]
    by_id = {entry["id"]: entry for entry in body if isinstance(entry.get("id"), str)}
    leaf = [entry for entry in body if isinstance(entry.get("id"), str)][-1:]
    for entry in reversed(path_to(leaf[0], by_id) if leaf else []):
        if entry.get("type") == "title_change" and _text(entry.get("title")):
            return entry["title"], _text(entry.get("source")) or "user"
    names = [
        name
        for entry in records[start + 1 :]
        if entry.get("type") == "session_info" and (name := _text(entry.get("name")))
    ]
    if names:
        return names[-1], "user"
    head = records[start]
    if _text(head.get("title")):
        return head["title"], head.get("titleSource")
    for record in reversed(records[:start]):
        if _text(record.get("title")):
            return record["title"], record.get("source")
    summaries = [
        entry["shortSummary"]
        for entry in records[start + 1 :]
        if entry.get("type") == "compaction" and isinstance(entry.get("shortSummary"), str)
    ]
    return (summaries[-1] if summaries else None), None


def _usage_key(provider: Any, model: Any) -> str:
    """How ``usage --by model`` names a row's provider and model columns."""
    provider = provider if isinstance(provider, str) else None
    model = model if isinstance(model, str) else None
    return (f"{provider}/" if provider is not None else "") + (model if model is not None else "?")


def expected_usage_model(entry: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    """The model an assistant message's usage counts under: its own, else the default model
    in effect where it was written, else whatever half it names."""
    own = _named_assistant(entry)
    if own is not None:
        return own
    in_effect = dict(expected_models(path_to(entry, by_id)[:-1])).get("default")
    if isinstance(in_effect, str):
        return in_effect
    return _usage_key(entry["message"].get("provider"), entry["message"].get("model"))


def _fixture_facts(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(every record of the file, the entries after the header), ids as the index makes them."""
    records = load_session(str(path), new_id=synthetic_ids_for(str(path))).entries
    return records, records[find_header_index(records) + 1 :]


# --------------------------------------------------------------------------------------------
# Every real pi file


@pytest.fixture(scope="module")
def fixture_agents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One indexed agent dir per fixture, so copies shared between fixtures count in each."""
    agents = {}
    for source in PI_FIXTURES:
        agent = tmp_path_factory.mktemp("pi") / "agent"
        folder = agent / "sessions" / "--fixtures--"
        folder.mkdir(parents=True)
        shutil.copy(source, folder / source.name)
        with SessionIndex.open(str(agent)) as index:
            index.sync()
        agents[source.name] = folder / source.name
    return agents


@pytest.mark.parametrize("fixture", PI_FIXTURES, ids=lambda path: path.name)
def test_every_pi_fixture_has_the_models_and_title_of_d3_d26_d27(
    fixture, fixture_agents, monkeypatch
):
    copy = fixture_agents[fixture.name]
    agent = copy.parent.parent.parent
    monkeypatch.setenv("XCSH_AGENT_DIR", str(agent))
    records, body = _fixture_facts(copy)
    by_id = {entry["id"]: entry for entry in body if isinstance(entry.get("id"), str)}
    leaf_path = path_to(body[-1], by_id) if body else []
    models = expected_models(leaf_path)
    title, source = expected_title(records)

    # The library: the context, and the listing.
    assert list(build_session_context(body).models.items()) == models
    (listed,) = list_all_sessions(agent_dir=str(agent))
    assert (listed.title or None) == title

    # The index, through the command line.
    shown = run_json("show", str(copy), "--context")
    assert list(shown["context"]["models"].items()) == models
    (session,) = run_json("ls")
    assert (session["title"], session["title_source"]) == (title, source)

    usage = Counter(
        expected_usage_model(entry, by_id)
        for entry in by_id.values()
        if entry.get("type") == "message"
        and type(entry.get("message")) is dict
        and entry["message"].get("role") == "assistant"
        and type(entry["message"].get("usage")) is dict
    )
    assert {
        row["key"]: row["entries"] for row in run_json("usage", "--by", "model")["rows"]
    } == usage


def _rare_word(entry: dict[str, Any]) -> str | None:
    content = entry["message"].get("content")
    texts = [
        block["text"]
        for block in (content if type(content) is list else [])
        if type(block) is dict
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    words = re.findall(r"\b[A-Za-z][A-Za-z0-9]{3,}\b", " ".join(texts))
    return max(words, key=len) if words else None


@pytest.mark.parametrize("fixture", PI_FIXTURES, ids=lambda path: path.name)
def test_search_by_model_finds_each_model_of_every_pi_fixture(fixture, fixture_agents, monkeypatch):
    copy = fixture_agents[fixture.name]
    monkeypatch.setenv("XCSH_AGENT_DIR", str(copy.parent.parent.parent))
    _, body = _fixture_facts(copy)
    by_id = {entry["id"]: entry for entry in body if isinstance(entry.get("id"), str)}
    probes: dict[str, tuple[str, str]] = {}
    for entry in by_id.values():
        if _named_assistant(entry) is None and entry.get("type") == "message":
            if type(entry.get("message")) is not dict:
                continue
            if entry["message"].get("role") != "assistant":
                continue
        elif _named_assistant(entry) is None:
            continue
        model = expected_usage_model(entry, by_id)
        word = _rare_word(entry)
        if word is not None and "/" in model:
            probes.setdefault(model, (word, entry["id"]))
    for model, (word, entry_id) in probes.items():
        name = model.split("/", 1)[1]
        hits = run_json("search", word, "--model", name, "--role", "assistant", "--limit", "100")
        assert entry_id in {hit["entry_id"] for hit in hits}, (model, word)


def test_pi_model_changes_and_session_names_are_present_in_the_fixtures():
    """The per-fixture tests above cover both forms (otherwise they would prove nothing)."""
    forms = Counter()
    for fixture in PI_FIXTURES:
        _, body = _fixture_facts(fixture)
        forms["modelId"] += any(
            entry.get("type") == "model_change" and "modelId" in entry for entry in body
        )
        forms["session_info"] += any(entry.get("type") == "session_info" for entry in body)
    assert forms["modelId"] >= 15 and forms["session_info"] >= 3


# --------------------------------------------------------------------------------------------
# pi's forms and assistant messages without a model, in small files


def _pi_change(entry_id: str, parent: str | None, provider: Any, model_id: Any) -> dict[str, Any]:
    return {
        "type": "model_change",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "provider": provider,
        "modelId": model_id,
    }


def _unnamed_assistant(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    entry = message(entry_id, parent, "assistant", text)
    del entry["message"]["provider"], entry["message"]["model"]
    return entry


def _name(entry_id: str, parent: str | None, name: Any) -> dict[str, Any]:
    return {
        "type": "session_info",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:02.000Z",
        "name": name,
    }


def test_a_pi_model_change_sets_the_model_and_an_unnamed_assistant_sets_none():
    entries = [
        message("u", None, "user", "hi"),
        _pi_change("m", "u", "openai", "gpt-5"),
        _unnamed_assistant("a", "m", "hello"),
    ]
    assert build_session_context(entries).models == {"default": "openai/gpt-5"}
    assert build_session_context(entries[2:]).models == {}


@pytest.mark.parametrize(
    "provider, model_id", [("", "gpt-5"), ("openai", ""), (None, "gpt-5"), ("openai", 5)]
)
def test_a_pi_model_change_needs_a_provider_and_a_model_id(provider, model_id):
    entries = [_pi_change("m", None, provider, model_id)]
    assert build_session_context(entries).models == {}


def test_the_default_key_keeps_the_place_the_reference_gives_it():
    """xcsh inserts ``default`` at the first assistant message naming a model (or the first
    default model change), so JSON.stringify writes it there, even after an override."""
    entries = [
        _unnamed_assistant("a0", None, "no model yet"),
        _pi_change("s", "a0", "anthropic", "haiku") | {"role": "smol"},
        message("a1", "s", "assistant", "named"),
        {"type": "model_change", "id": "p", "parentId": "a1", "model": "x/plan", "role": "plan"},
        {"type": "model_change", "id": "d", "parentId": "p", "model": "openai/gpt-5"},
    ]
    models = build_session_context(entries).models
    assert json.dumps(models, separators=(",", ":")) == (
        '{"smol":"anthropic/haiku","default":"openai/gpt-5","plan":"x/plan"}'
    )
    assert list(build_session_context(entries[:3]).models) == ["smol", "default"]
    assert list(build_session_context(entries[1:3]).models) == ["smol", "default"]
    before = [entries[2] | {"parentId": None}, entries[1] | {"parentId": "a1"}]
    assert list(build_session_context(before).models) == ["default", "smol"]


def test_the_index_context_keeps_the_key_order_behind_a_compaction(agent_dir):
    """Behind a compaction the index reads only state changes; the first named assistant
    message still places ``default`` before a later role."""
    path = sessions_dir(agent_dir) / "order.jsonl"
    write_session(
        path,
        [
            header("order"),
            message("u", None, "user", "start"),
            message("a", "u", "assistant", "first answer"),
            {"type": "model_change", "id": "s", "parentId": "a", "model": "x/small",
             "role": "smol"},
            _unnamed_assistant("b", "s", "unnamed answer"),
            {"type": "compaction", "id": "c", "parentId": "b", "summary": "so far",
             "firstKeptEntryId": "b", "tokensBefore": 5},
            message("v", "c", "user", "go on"),
        ],
    )  # fmt: skip
    run_json("sync")
    shown = run_json("show", "order", "--context")
    assert list(shown["context"]["models"].items()) == [
        ("default", "anthropic/claude-test"),
        ("smol", "x/small"),
    ]


def test_session_info_names_the_session_in_the_listing_the_index_and_search(agent_dir):
    path = sessions_dir(agent_dir) / "named.jsonl"
    write_session(
        path,
        [
            header("named", title="Header title", titleSource="auto"),
            message("u", None, "user", "hi"),
            _name("n1", "u", "First name"),
            _name("n2", "n1", "Zanzibar plans"),
            _name("n3", "n2", ""),
        ],
    )
    (listed,) = list_all_sessions(agent_dir=str(agent_dir))
    assert listed.title == "Zanzibar plans"
    run_json("sync")
    (session,) = run_json("ls")
    assert (session["title"], session["title_source"]) == ("Zanzibar plans", "user")
    hits = run_json("search", "zanzibar")
    assert [(hit["session_id"], hit["entry_id"]) for hit in hits] == [("named", "n2")]


def test_a_session_name_appended_later_renames_the_session_on_the_next_sync(agent_dir):
    path = sessions_dir(agent_dir) / "later.jsonl"
    write_session(path, [header("later", title="Header title"), message("u", None, "user", "hi")])
    run_json("sync")
    assert run_json("ls")[0]["title"] == "Header title"
    append(path, _name("n", "u", "Renamed by pi"))
    assert run_json("sync")["files_reindexed"] == 0  # read on from the old end
    assert (run_json("ls")[0]["title"], run_json("ls")[0]["title_source"]) == (
        "Renamed by pi",
        "user",
    )
    append(path, message("v", "n", "user", "more"))
    run_json("sync")
    assert run_json("ls")[0]["title"] == "Renamed by pi"
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.verify().clean


def test_unnamed_assistant_messages_count_under_the_model_in_effect_across_syncs(agent_dir):
    path = sessions_dir(agent_dir) / "pi.jsonl"
    write_session(
        path,
        [
            header("pi"),
            _pi_change("m", None, "kimchi", "k2"),
            message("u", "m", "user", "hi"),
            _unnamed_assistant("a", "u", "first"),
        ],
    )
    run_json("sync")
    # Appended after the sync: its parent chain is only in the index now.
    append(path, message("v", "a", "user", "again"), _unnamed_assistant("b", "v", "second"))
    assert run_json("sync")["files_reindexed"] == 0
    usage = run_json("usage", "--by", "model")["rows"]
    assert [(row["key"], row["entries"]) for row in usage] == [("kimchi/k2", 2)]
    hits = run_json("search", "second", "--model", "k2")
    assert [hit["entry_id"] for hit in hits] == ["b"]
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.verify().clean


def test_tree_and_outline_show_a_pi_model_change_and_session_name(agent_dir):
    path = sessions_dir(agent_dir) / "tree.jsonl"
    write_session(
        path,
        [header("tree"), _pi_change("m", None, "openai", "gpt-5"), _name("n", "m", "Tree name")],
    )
    run_json("sync")
    result = run("show", "tree", "--tree")
    assert result.exit_code == 0
    assert "model: openai/gpt-5" in result.output
    assert "session name: Tree name" in result.output


def test_an_index_from_before_0005_derives_names_and_models_again(agent_dir):
    path = sessions_dir(agent_dir) / "old.jsonl"
    write_session(
        path,
        [
            header("old"),
            _pi_change("m", None, "kimchi", "k2"),
            _unnamed_assistant("a", "m", "answer"),
            _name("n", "a", "Pi name"),
        ],
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        # Rows as the store wrote them before migration 0005.
        index.connection.execute(
            "UPDATE sessions SET title = NULL, title_source = NULL;"
            " UPDATE entries SET provider = NULL, model = NULL WHERE id = 'a';"
            " DELETE FROM meta; DELETE FROM schema_migrations WHERE name LIKE '0005%'"
        )
    with SessionIndex.open(str(agent_dir)) as index:
        assert index.sync().files_reindexed == 1
        (session,) = index.list_sessions()
        assert session.title == "Pi name"
        assert [row.key for row in index.usage(by="model")] == ["kimchi/k2"]


def test_pi_forms_are_kept_unchanged_when_a_file_is_migrated(agent_dir):
    path = sessions_dir(agent_dir) / "v2.jsonl"
    lines = [
        header("v2") | {"version": 2},
        _pi_change("m", None, "openai", "gpt-5"),
        _name("n", "m", "Kept"),
    ]
    write_session(path, lines)
    assert run_json("migrate", str(path))["files"][0]["status"] == "migrated"
    written = path.read_bytes().splitlines()
    assert orjson.loads(written[0])["version"] == 3
    assert written[1:] == [dumps(line) for line in lines[1:]]


def test_pi_forms_are_kept_unchanged_when_a_file_is_appended_to(agent_dir):
    path = sessions_dir(agent_dir) / "keep.jsonl"
    lines = [
        header("keep"),
        _pi_change("m", None, "openai", "gpt-5"),
        _name("n", "m", "Kept"),
    ]
    write_session(path, lines)
    manager = xcsh_store.SessionManager.open(str(path))
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    manager.close()
    written = path.read_bytes().splitlines()
    assert written[1:3] == [dumps(line) for line in lines[1:]]


# --------------------------------------------------------------------------------------------
# Lookups


def test_lookup_errors_are_lookup_errors():
    assert issubclass(SessionNotFoundError, LookupError)
    assert issubclass(AmbiguousSessionError, LookupError)
    assert issubclass(AmbiguousSessionError, XcshStoreError)
    assert issubclass(EntryNotFoundError, KeyError)
    assert xcsh_store.AmbiguousSessionError is AmbiguousSessionError


def _sessions(agent_dir: Path, *names: tuple[str, str]) -> list[Path]:
    return [
        write_session(
            sessions_dir(agent_dir) / file, [header(session_id), message("u", None, "user", file)]
        )
        for file, session_id in names
    ]


def test_an_ambiguous_prefix_is_an_error_listing_the_candidates(agent_dir):
    paths = _sessions(agent_dir, ("a.jsonl", "0195aaaa"), ("b.jsonl", "0195bbbb"), ("c.jsonl", "7"))
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        with pytest.raises(AmbiguousSessionError) as raised:
            index.find_session("0195")
        assert sorted(raised.value.candidates) == sorted(str(path) for path in paths[:2])
        assert index.find_session("0195b").session_id == "0195bbbb"
    run_json("sync")
    result = run("show", "0195")
    assert result.exit_code == 1
    # Each by the short id that selects it and its title (here its first message).
    assert '0195aaaa "a.jsonl"' in result.output and '0195bbbb "b.jsonl"' in result.output
    assert "Traceback" not in result.output


def test_files_sharing_a_session_id_are_told_apart_by_file_name_or_path(agent_dir):
    first, second, _ = _sessions(
        agent_dir, ("one.jsonl", "same"), ("two.jsonl", "same"), ("other.jsonl", "samer")
    )
    run_json("sync")
    result = run("show", "same")
    assert result.exit_code == 1
    assert str(first) in result.output and str(second) in result.output
    assert run_json("show", "two")["session"]["path"] == str(second)
    assert run_json("show", "one.jsonl")["session"]["path"] == str(first)
    assert run_json("show", str(second))["session"]["path"] == str(second)
    assert run_json("show", "samer")["session"]["path"].endswith("other.jsonl")
    shared = {Path(row["path"]).name: row["id_shared"] for row in run_json("ls")}
    assert shared == {"one.jsonl": True, "two.jsonl": True, "other.jsonl": False}


def test_ls_marks_ids_shared_by_several_files(agent_dir):
    _sessions(agent_dir, ("one.jsonl", "same-id-0001"), ("two.jsonl", "same-id-0001"))
    run_json("sync")
    output = run("ls").output
    assert len(re.findall(r"^same-id-\S*\* ", output, re.MULTILINE)) == 2
    assert "* id shared by several files" in output
    _sessions(agent_dir, ("one.jsonl", "unique-id-01"))
    run_json("sync")
    assert "*" not in run("ls").output


def test_an_ambiguous_prefix_lists_ten_candidates_a_line_each_and_counts_the_rest(agent_dir):
    _sessions(agent_dir, *((f"s{number:02d}.jsonl", f"0196{number:04d}") for number in range(23)))
    run_json("sync")
    result = run("show", "0196")
    assert result.exit_code == 1
    first, *candidates, rest = result.output.splitlines()
    assert "matches 23 session files" in first
    # Ten candidates, one a line (issue 35 item 6: the 613-character line), then the count.
    assert len(candidates) == 10 and all("0196" in line for line in candidates)
    assert rest.strip() == "and 13 more"


def test_recent_sessions_are_named_by_a_session_info_entry_in_their_first_bytes(agent_dir):
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "recent.jsonl",
        [header("recent", title="Header title"), message("u", None, "user", "hi"),
         _name("n", "u", "Named by pi")],
    )  # fmt: skip
    (recent,) = xcsh_store.get_recent_sessions(str(folder))
    assert recent.full_name == "Named by pi"


def _usage_by_entry(agent_dir: Path) -> dict[str, str]:
    with SessionIndex.open(str(agent_dir)) as index:
        rows = index.connection.execute(
            "SELECT id, coalesce(provider || '/', '') || coalesce(model, '?') FROM entries"
            " WHERE role = 'assistant'"
        ).fetchall()
        assert index.verify().clean
    return dict(rows)


def test_a_parent_written_after_its_child_gives_the_same_models_synced_at_once_or_in_steps(
    agent_dir,
):
    """Only what a file holds before an entry decides what it inherits, however it is synced."""
    lines = [
        header("late"),
        _unnamed_assistant("a", "m", "before its parent"),
        _pi_change("m", None, "kimchi", "k2"),
        _unnamed_assistant("b", "a", "child of the early one"),
        _unnamed_assistant("c", "m", "child of the change"),
    ]
    path = sessions_dir(agent_dir) / "late.jsonl"
    write_session(path, lines)
    run_json("sync")
    at_once = _usage_by_entry(agent_dir)
    assert at_once == {"a": "?", "b": "?", "c": "kimchi/k2"}
    (agent_dir / "index.db").unlink()
    write_session(path, lines[:3])
    run_json("sync")
    for line in lines[3:]:
        append(path, line)
        assert run_json("sync")["files_reindexed"] == 0
    assert _usage_by_entry(agent_dir) == at_once


def test_each_branch_inherits_the_model_of_its_own_path(agent_dir):
    path = sessions_dir(agent_dir) / "branches.jsonl"
    write_session(
        path,
        [
            header("branches"),
            message("u", None, "user", "start"),
            _pi_change("x", "u", "one", "first"),
            _unnamed_assistant("a", "x", "on the first branch"),
            _pi_change("y", "u", "two", "second"),
            _unnamed_assistant("b", "y", "on the second branch"),
            _unnamed_assistant("c", "u", "before any change"),
        ],
    )
    run_json("sync")
    assert _usage_by_entry(agent_dir) == {"a": "one/first", "b": "two/second", "c": "?"}


_MODEL_KINDS = ["user", "named", "unnamed", "pi_change", "smol_change", "bad_change"]


def _model_entry(kind: str, entry_id: str, parent: str | None, number: int) -> dict[str, Any]:
    if kind == "user":
        return message(entry_id, parent, "user", f"u{number}")
    if kind == "named":
        return message(entry_id, parent, "assistant", f"a{number}") | {"timestamp": f"t{number}"}
    if kind == "unnamed":
        return _unnamed_assistant(entry_id, parent, f"a{number}") | {"timestamp": f"t{number}"}
    provider = "" if kind == "bad_change" else f"p{number % 2}"
    change = _pi_change(entry_id, parent, provider, f"m{number}")
    return change | {"role": "smol"} if kind == "smol_change" else change


@settings(max_examples=examples(40), deadline=None)
@given(
    plan=st.lists(
        st.tuples(
            st.sampled_from(_MODEL_KINDS),
            # The parent: None a root, -1 the next entry (written later), k the entry k back.
            st.one_of(st.none(), st.just(-1), st.integers(min_value=0, max_value=3)),
            st.booleans(),  # sync after this entry
        ),
        min_size=1,
        max_size=14,
    )
)
def test_inherited_models_are_the_same_however_a_file_is_synced(plan):
    """An unnamed assistant message's model columns do not depend on how often the file was
    synced while it grew (forward parents included), and verify stays clean."""
    lines = [header("grown")]
    for number, (kind, parent, _) in enumerate(plan):
        if parent == -1:
            parent_id = f"e{number + 1}"
        else:
            parent_id = None if parent is None else f"e{max(number - 1 - parent, 0)}"
        lines.append(_model_entry(kind, f"e{number}", parent_id, number))
    with tempfile.TemporaryDirectory() as base:
        agent = Path(base)
        path = sessions_dir(agent) / "grown.jsonl"
        write_session(path, lines[:1])
        with SessionIndex.open(str(agent)) as index:
            for number, (_, _, sync_now) in enumerate(plan):
                append(path, lines[number + 1])
                if sync_now:
                    index.sync()
            index.sync()
            in_steps = _usage_by_entry(agent)
        (agent / "index.db").unlink()
        with SessionIndex.open(str(agent)) as index:
            index.sync()
        assert _usage_by_entry(agent) == in_steps
