"""Session format migrations: v1 -> v2 -> v3 and the repairs of odd headers and missing ids.

(compatibility: Session file format as in the reference; Header versions read leniently; A second
header is an opaque record; Entries without id or parentId)
"""

from __future__ import annotations

import re

import pytest
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from session_builder import PI_FIXTURES

from xcsh_store.format.loader import load_entries_from_file
from xcsh_store.format.versions import (
    CURRENT_SESSION_VERSION,
    find_header_index,
    is_valid_session,
    migrate_session_entries,
    session_version,
)
from xcsh_store.js import stringify as dumps

HEX8 = re.compile(r"[0-9a-f]{8}")


def _header(**extra):
    return {
        "type": "session",
        "id": "s1",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": "/w",
    } | extra


def _message(role="user", text="hi"):
    return {"type": "message", "timestamp": "t", "message": {"role": role, "content": text}}


def test_current_version_is_3():
    assert CURRENT_SESSION_VERSION == 3


def test_v3_session_is_left_alone():
    entries = [
        _header(version=3),
        {"type": "message", "id": "a", "parentId": None, "timestamp": "t", "message": {}},
    ]
    before = dumps(entries)
    assert migrate_session_entries(entries) is False
    assert dumps(entries) == before


def test_v1_becomes_a_linear_chain_with_fresh_ids():
    entries = [_header(), _message(), _message("assistant"), _message()]
    assert migrate_session_entries(entries) is True
    header, *body = entries
    assert header["version"] == 3
    assert [entry["parentId"] for entry in body] == [None, body[0]["id"], body[1]["id"]]
    assert all(HEX8.fullmatch(entry["id"]) for entry in body)
    assert len({entry["id"] for entry in body}) == 3


def test_v1_ids_and_parent_ids_are_appended_after_existing_keys():
    entries = [_header(), {"type": "message", "id": "old", "timestamp": "t", "message": {}}]
    migrate_session_entries(entries)
    assert list(entries[0]) == ["type", "id", "timestamp", "cwd", "version"]
    assert list(entries[1]) == ["type", "id", "timestamp", "message", "parentId"]
    assert entries[1]["id"] != "old"


def test_v1_compaction_index_counts_the_header_as_zero():
    entries = [
        _header(),
        _message(text="first"),
        _message(text="second"),
        {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 2},
    ]
    migrate_session_entries(entries)
    assert entries[3]["firstKeptEntryId"] == entries[2]["id"]
    assert "firstKeptEntryIndex" not in entries[3]


@pytest.mark.parametrize("index", [0, 9, -1, 1.5])
def test_v1_compaction_index_without_a_target_is_dropped(index):
    entries = [
        _header(),
        _message(),
        {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": index},
    ]
    migrate_session_entries(entries)
    assert "firstKeptEntryIndex" not in entries[2]
    assert "firstKeptEntryId" not in entries[2]


def test_v1_compaction_index_pointing_forward_finds_no_new_id():
    entries = [
        _header(),
        {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 2},
        _message(),
    ]
    migrate_session_entries(entries)
    assert "firstKeptEntryId" not in entries[1]


def test_v1_non_numeric_compaction_index_is_kept():
    entries = [
        _header(),
        {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": "2"},
    ]
    migrate_session_entries(entries)
    assert entries[1]["firstKeptEntryIndex"] == "2"


def test_v2_hook_message_becomes_custom():
    entries = [
        _header(version=2),
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "t",
            "message": {"role": "hookMessage", "content": "x"},
        },
    ]
    assert migrate_session_entries(entries) is True
    assert entries[1]["message"]["role"] == "custom"
    assert entries[1]["id"] == "a"
    assert entries[0]["version"] == 3


@pytest.mark.parametrize(
    ("version", "effective"),
    [
        (None, 1),
        ("1", 1),
        ("2", 2),
        (" 3 ", 3),
        (3, 3),
        (3.0, 3),
        (4, 4),
        ("abc", 1),
        (0, 1),
        (-2, 1),
        (True, 1),
        (2.5, 1),
        ([3], 1),
    ],
)
def test_version_oddities(version, effective):
    header = _header() if version is None else _header(version=version)
    assert session_version(header) == effective


def test_string_version_one_is_migrated():
    entries = [_header(version="1"), _message()]
    assert migrate_session_entries(entries)
    assert entries[0]["version"] == 3
    assert HEX8.fullmatch(entries[1]["id"])


def test_second_session_line_is_an_opaque_record():
    entries = [_header(), _message(), _header(id="other"), _message()]
    migrate_session_entries(entries)
    assert entries[2] == _header(id="other")
    assert entries[3]["parentId"] == entries[1]["id"]


def test_title_records_before_the_header_are_kept():
    title = {"type": "title", "v": 1, "title": "T"}
    entries = [title, _header(), _message()]
    migrate_session_entries(entries)
    assert entries[0] == {"type": "title", "v": 1, "title": "T"}
    assert find_header_index(entries) == 1


def test_v3_entries_without_ids_get_ids_and_a_chain():
    entries = [_header(version=3), _message(), _message("assistant")]
    assert migrate_session_entries(entries) is True
    assert HEX8.fullmatch(entries[1]["id"])
    assert entries[1]["parentId"] is None
    assert entries[2]["parentId"] == entries[1]["id"]


def test_v3_entries_without_parent_ids_follow_file_order():
    entries = [
        _header(version=3),
        {"type": "model_change", "id": "m1", "timestamp": "t", "model": "a/b"},
        {"type": "session_info", "id": "si", "timestamp": "t"},
        {"type": "message", "id": "u1", "parentId": "m1", "timestamp": "t", "message": {}},
        {"type": "message", "id": "a1", "timestamp": "t", "message": {}},
    ]
    assert migrate_session_entries(entries) is True
    assert [entry.get("parentId") for entry in entries[1:]] == [None, "m1", "m1", "u1"]


def test_unknown_types_without_ids_are_left_alone():
    record = {"type": "future_thing", "payload": 1}
    entries = [_header(version=3), dict(record)]
    assert migrate_session_entries(entries) is False
    assert entries[1] == record


def test_deterministic_ids_can_be_injected():
    counter = iter(range(100))
    entries = [_header(), _message(), _message()]
    migrate_session_entries(entries, new_id=lambda existing, position: f"{next(counter):08x}")
    assert [entry["id"] for entry in entries[1:]] == ["00000000", "00000001"]


def test_validity_needs_a_header_with_a_string_id():
    assert is_valid_session([_header()])
    assert is_valid_session([{"type": "title"}, _header()])
    assert not is_valid_session([])
    assert not is_valid_session([_message(), _header()])
    assert not is_valid_session([_header(id=7)])


@pytest.mark.parametrize("path", PI_FIXTURES, ids=lambda path: path.name)
def test_fixture_migration_round_trips(path):
    entries = load_entries_from_file(str(path))
    if path.name == "swarm-ops__kuato__empty-session.jsonl":
        assert len(entries) == 1
    assert entries, "every pi fixture has a valid header"
    migrate_session_entries(entries)
    body = entries[find_header_index(entries) + 1 :]
    ids = [entry["id"] for entry in body if "id" in entry]
    assert len(ids) == len(set(ids))
    text = b"".join(dumps(entry) + b"\n" for entry in entries)
    copy = path.parent.parent.parent / "tmp_roundtrip.jsonl"
    try:
        copy.write_bytes(text)
        again = load_entries_from_file(str(copy))
    finally:
        copy.unlink()
    assert again == entries
    assert migrate_session_entries(again) is False


def test_v1_fixture_becomes_a_chain_of_unique_hex_ids():
    path = next(p for p in PI_FIXTURES if p.name == "emilio3435__formic__v1-linear.jsonl")
    entries = load_entries_from_file(str(path))
    migrate_session_entries(entries)
    assert all(HEX8.fullmatch(entry["id"]) for entry in entries[1:])
    assert entries[2]["parentId"] == entries[1]["id"]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["message", "compaction", "label", "session", "x"])},
            optional={
                "id": st.text(max_size=3),
                "parentId": st.one_of(st.none(), st.text(max_size=3)),
                "firstKeptEntryIndex": st.one_of(st.integers(-3, 10), st.floats(), st.text()),
                "message": st.fixed_dictionaries({}, optional={"role": st.text(max_size=12)}),
            },
        ),
        max_size=12,
    ),
    st.one_of(st.none(), st.integers(-1, 4), st.text(max_size=3)),
)
def test_migration_never_raises_and_is_idempotent(body, version):
    entries = [_header() if version is None else _header(version=version), *body]
    migrate_session_entries(entries)
    assert session_version(entries[0]) >= 3
    assert migrate_session_entries(entries) is False
