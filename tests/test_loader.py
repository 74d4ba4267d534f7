"""Loading session files: header rules, hostile bytes, every real fixture, blob rehydration."""

from __future__ import annotations

import base64

import pytest
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from session_builder import PI_FIXTURES

from xcsh_store.format import loader as loader_module
from xcsh_store.format.blobs import BlobStore
from xcsh_store.format.jsonl import parse_line
from xcsh_store.format.loader import (
    load_entries_from_file,
    load_session,
    parse_session_entries,
    read_session_file,
    sanitize_openai_replay_metadata,
)
from xcsh_store.format.persist import entry_to_line
from xcsh_store.format.storage import MemorySessionStorage
from xcsh_store.format.versions import find_header_index
from xcsh_store.js import stringify as dumps

HEADER = (
    b'{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
)
ENTRY = (
    b'{"type":"message","id":"a1","parentId":null,"timestamp":"t",'
    b'"message":{"role":"user","content":"hi"}}\n'
)


def _write(tmp_path, data: bytes, name="s.jsonl"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_missing_file_loads_as_empty(tmp_path):
    assert load_entries_from_file(str(tmp_path / "nope.jsonl")) == []


def test_missing_file_in_memory_storage_loads_as_empty():
    assert load_entries_from_file("/nope.jsonl", MemorySessionStorage()) == []


def test_empty_file_loads_as_empty(tmp_path):
    assert load_entries_from_file(_write(tmp_path, b"")) == []


@pytest.mark.parametrize(
    "first_line",
    [
        b'{"type":"message","id":"x"}\n',
        b'{"type":"session","id":7}\n',
        b'{"type":"session"}\n',
        b"[1,2,3]\n",
    ],
)
def test_without_a_valid_header_the_file_is_not_a_session(tmp_path, first_line):
    assert load_entries_from_file(_write(tmp_path, first_line + ENTRY)) == []


def test_valid_file_loads_everything(tmp_path):
    entries = load_entries_from_file(_write(tmp_path, HEADER + ENTRY + b"garbage\n" + ENTRY))
    assert [entry["type"] for entry in entries] == ["session", "message", "message"]


def test_malformed_header_line_then_valid_header(tmp_path):
    entries = load_entries_from_file(_write(tmp_path, b"{oops\n" + HEADER + ENTRY))
    assert entries[0]["type"] == "session"


def test_title_record_before_the_header_is_accepted(tmp_path):
    title = b'{"type":"title","v":1,"title":"T"}\n'
    entries = load_entries_from_file(_write(tmp_path, title + HEADER + ENTRY))
    assert [entry["type"] for entry in entries] == ["title", "session", "message"]
    assert find_header_index(entries) == 1


def test_memory_storage_loads_the_same(tmp_path):
    storage = MemorySessionStorage()
    storage.write_text("/s.jsonl", (HEADER + ENTRY).decode())
    assert load_entries_from_file("/s.jsonl", storage) == load_entries_from_file(
        _write(tmp_path, HEADER + ENTRY)
    )


def test_parse_session_entries_has_no_header_check():
    assert parse_session_entries(ENTRY.decode()) == [
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "t",
            "message": {"role": "user", "content": "hi"},
        }
    ]


@pytest.mark.parametrize(
    "junk",
    [
        b"\xef\xbb\xbf",
        b"\x00\x00\x00\n",
        b"\xff\xfe\xfd\n",
        b'{"text":"\xc3\x28"}\n',
        b"[" * 50_000 + b"\n",
        b'{"a":' * 30_000 + b"1" + b"}" * 30_000 + b"\n",
        b"\n" * 1000,
        b'{"type":"message"',
    ],
)
def test_hostile_bytes_never_crash_and_never_lose_a_valid_line(tmp_path, junk):
    data = (junk if junk.startswith(b"\xef") else b"") + HEADER + ENTRY + junk + b"\n" + ENTRY
    entries = load_entries_from_file(_write(tmp_path, data))
    ids = [entry.get("id") for entry in entries if entry.get("type") == "message"]
    assert ids.count("a1") == 2


@settings(max_examples=examples(150), deadline=None)
@given(st.binary(max_size=3000))
def test_arbitrary_bytes_never_make_the_loader_raise(data):
    storage = MemorySessionStorage()
    storage.files["/x.jsonl"] = (data, 0.0)
    entries = load_entries_from_file("/x.jsonl", storage)
    assert all(isinstance(entry, dict) for entry in entries)
    load_session("/x.jsonl", storage)


@pytest.mark.parametrize("path", PI_FIXTURES, ids=lambda path: path.name)
def test_every_pi_fixture_loads(path):
    loaded = load_session(str(path))
    assert loaded.entries, path.name
    raw_lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    # Malformed lines are skipped and glued objects recovered, so the counts may differ by those.
    assert abs(len(loaded.entries) - len(raw_lines)) <= 2


@pytest.mark.parametrize(
    ("name", "line_number"),
    [("badlogic__pi-mono__session.jsonl", 440), ("badlogic__pi-mono__compact.jsonl", 1013)],
)
def test_glued_lines_keep_both_objects(name, line_number):
    path = next(p for p in PI_FIXTURES if p.name == name)
    line = path.read_bytes().split(b"\n")[line_number - 1]
    entries = read_session_file(str(path)).entries
    lines_before = len([x for x in path.read_bytes().split(b"\n")[: line_number - 1] if x.strip()])
    first, second = entries[lines_before], entries[lines_before + 1]
    assert line.startswith(dumps(first)[:60])
    assert first["type"] == "message"
    if name.endswith("compact.jsonl"):
        assert second["type"] == "compaction"


def test_blob_refs_are_rehydrated_on_load(tmp_path):
    store = BlobStore(str(tmp_path / "blobs"))
    data = base64.b64encode(bytes(range(256)) * 8).decode()
    entry = {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "t",
        "message": {"role": "user", "content": [{"type": "image", "data": data}]},
    }
    path = _write(tmp_path, HEADER + entry_to_line(entry, store))
    assert b"blob:sha256:" in (tmp_path / "s.jsonl").read_bytes()
    loaded = load_session(path, blob_store=store)
    assert loaded.entries[1]["message"]["content"][0]["data"] == data


def test_migration_is_reported(tmp_path):
    v1 = b'{"type":"session","id":"s","timestamp":"t","cwd":"/w"}\n' + ENTRY
    assert load_session(_write(tmp_path, v1)).migrated is True
    assert load_session(_write(tmp_path, HEADER + ENTRY, "v3.jsonl")).migrated is False


def test_openai_replay_metadata_is_sanitised_in_memory():
    message = {
        "role": "assistant",
        "providerPayload": {"type": "openaiResponsesHistory", "items": []},
        "content": [
            {"type": "thinking", "thinking": "t", "thinkingSignature": "sig"},
            {"type": "text", "text": "x"},
        ],
    }
    user = {"role": "user", "providerPayload": {"type": "openaiResponsesHistory"}}
    entries = [{"type": "message", "message": message}, {"type": "message", "message": user}]
    assert sanitize_openai_replay_metadata(entries) is True
    assert entries[0]["message"] == {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "t"}, {"type": "text", "text": "x"}],
    }
    assert message["providerPayload"]["type"] == "openaiResponsesHistory", "a copy, not a mutation"
    assert "providerPayload" in entries[1]["message"]


def test_a_folder_where_the_file_should_be_raises_an_os_error(tmp_path):
    folder = tmp_path / "s.jsonl"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        load_entries_from_file(str(folder))


_marked_texts = st.sampled_from(
    ["plain", "blob:sha256:" + "0" * 64, "colour \x1b[31m", "openaiResponsesHistory", "é"]
)
_lines = st.one_of(
    st.builds(lambda text: dumps({"type": "message", "text": text}), _marked_texts),
    st.builds(lambda text: b'{"glued":"' + text.encode() + b'"}{"b":1}', _marked_texts),
    st.sampled_from([b"", b"  ", b"[1]", b"blob:sha256:", b"\\u00e9", b'{"cut":"\\u00', b"\xff"]),
)


@settings(max_examples=examples(200), deadline=None)
@given(lines=st.lists(_lines, max_size=40), chunk=st.integers(min_value=3, max_value=200))
def test_second_look_lists_name_every_object_of_a_marked_line(tmp_path_factory, lines, chunk):
    # Batches of any size, cut anywhere, must mark the objects of exactly the lines that hold a
    # blob ref, a \u escape or OpenAI replay metadata, whichever path parsed them.
    data = b"\n".join(lines)
    entries, blob_refs, replay = [], [], []
    for line in data.split(b"\n"):
        values = [] if line.isspace() else parse_line(line)
        indices = range(len(entries), len(entries) + len(values))
        if b"blob:sha256:" in line or b"\\u" in line:
            blob_refs.extend(indices)
        if b'"openaiResponsesHistory"' in line:
            replay.extend(indices)
        entries.extend(values)
    path = _write(tmp_path_factory.mktemp("marks"), data)
    storage = MemorySessionStorage()
    storage.files[path] = (data, 0.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loader_module, "READ_CHUNK", chunk)
        for contents in (read_session_file(path), read_session_file(path, storage)):
            assert contents.entries == entries
            assert contents.with_blob_refs == blob_refs
            assert contents.with_replay_metadata == replay
        assert read_session_file(path, markers=False).with_blob_refs == []
