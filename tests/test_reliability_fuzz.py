"""Property tests the other test files lack: the three JSONL readers agree on any bytes, random
trees (cycles, duplicates, legacy versions) give the same context from the index as from the
loader and never hang, the persistence transform, and the JSON query language round trip.

Example counts are CI-sized; ``XCSH_FUZZ_SCALE`` (benchmarks/stress.py) multiplies them.
"""

from __future__ import annotations

import base64
import io
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import quote

from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from store_checks import no_hang, same_context, tree_ids

from xcsh_store import SessionManager, build_session_context
from xcsh_store.artifacts.query import apply_query, path_to_query
from xcsh_store.format import jsonl as jsonl_module
from xcsh_store.format import loader as loader_module
from xcsh_store.format.blobs import BlobStore, decode_base64_leniently
from xcsh_store.format.context import index_by_id, path_to_root
from xcsh_store.format.jsonl import iter_records, parse_jsonl_bytes
from xcsh_store.format.loader import load_session, read_session_file
from xcsh_store.format.persist import (
    MAX_PERSIST_CHARS,
    TRANSIENT_KEYS,
    entry_to_line,
    prepare_entry_for_persistence,
    rehydrate_entry,
)
from xcsh_store.format.versions import find_header_index, synthetic_ids_for
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify as dumps
from xcsh_store.js import utf16_length

# --------------------------------------------------------------------------------------------
# The JSONL readers: the loader, the index's line reader and the in-memory parser

_objects = st.dictionaries(
    st.sampled_from(["type", "id", "parentId", "text", "n"]),
    st.one_of(st.integers(), st.text(max_size=8), st.none()),
    max_size=4,
)
_pieces = st.one_of(
    _objects.map(dumps),
    st.binary(max_size=12),
    st.sampled_from([b"\n", b"\r\n", b"\n\n", b"{", b"}", b'"', b"[", b"\xef\xbb\xbf", b"\x00"]),
)


@settings(max_examples=examples(200), deadline=None)
@given(
    bom=st.booleans(),
    pieces=st.lists(_pieces, max_size=30),
    # From 3 bytes: both readers look for the BOM in their first chunk, and a file read in
    # 4 MiB chunks has a first chunk shorter than the BOM only when it is the whole file.
    chunk=st.integers(min_value=3, max_value=64),
)
def test_the_three_jsonl_readers_agree_on_any_bytes(bom, pieces, chunk):
    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(pieces)
    expected = parse_jsonl_bytes(data)
    with (
        tempfile.NamedTemporaryFile() as handle,
        mock.patch.object(loader_module, "READ_CHUNK", chunk),
        mock.patch.object(jsonl_module, "READ_CHUNK", chunk),
    ):
        handle.write(data)
        handle.flush()
        contents = read_session_file(handle.name)
        streamed = [value for record in iter_records(io.BytesIO(data)) for value in record.values]
    assert contents.entries == expected
    assert streamed == expected
    body = data.removeprefix(b"\xef\xbb\xbf")
    assert contents.unterminated == (body != b"" and not body.endswith(b"\n"))


# --------------------------------------------------------------------------------------------
# Random trees: the index and the loader build the same context, and nothing hangs

_IDS = ["a", "b", "c", "d", "e", "f", "g", "h"]
_KINDS = [
    "user", "assistant", "toolResult", "model_change", "thinking_level_change", "compaction",
    "branch_summary", "custom_message", "label", "ttsr_injection", "mode_change", "custom",
    "session_init", "unknown_kind",
]  # fmt: skip


def _entry(kind: str, entry_id: str | None, parent: str | None, target: str, number: int) -> dict:
    base: dict[str, Any] = {"type": kind}
    if entry_id is not None:
        base["id"] = entry_id
        base["parentId"] = parent
    base["timestamp"] = f"2026-01-01T00:00:{number % 60:02d}.000Z"
    if kind in ("user", "assistant", "toolResult"):
        message: dict[str, Any] = {
            "role": kind,
            "content": [{"type": "text", "text": f"t{number}"}],
        }
        if kind == "assistant":
            message |= {"provider": "p", "model": f"m{number % 3}"}
        return base | {"type": "message", "message": message}
    extra: dict[str, Any] = {
        "model_change": {"model": f"p/m{number}"},
        "thinking_level_change": {"thinkingLevel": "high"},
        "compaction": {"summary": f"s{number}", "firstKeptEntryId": target, "tokensBefore": 1},
        "branch_summary": {"fromId": target, "summary": f"b{number}"},
        "custom_message": {"customType": "x", "content": f"c{number}", "display": True},
        "label": {"targetId": target, "label": f"l{number}"},
        "ttsr_injection": {"injectedRules": [f"r{number % 2}"]},
        "mode_change": {"mode": "plan", "data": {"n": number}},
        "custom": {"customType": "state", "data": number},
        "session_init": {"systemPrompt": "s", "task": "t", "tools": []},
    }.get(kind, {"payload": number})
    return base | extra


_trees = st.lists(
    st.tuples(
        st.sampled_from(_KINDS),
        st.one_of(st.sampled_from(_IDS), st.none()),  # duplicate ids and missing ids
        st.one_of(st.sampled_from([*_IDS, "ghost"]), st.none()),  # cycles, orphans, roots
        st.sampled_from([*_IDS, "ghost"]),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=examples(40), deadline=None)
@given(entries=_trees, version=st.sampled_from([None, 1, 2, "2", 3, 3.0, "x"]))
def test_any_tree_gives_the_same_context_from_the_index_and_never_hangs(entries, version):
    """Cycles, self-parents, duplicate and missing ids, orphans, compactions pointing anywhere,
    and every version (v1/v2 files are migrated with the index's deterministic ids)."""
    header: dict[str, Any] = {"type": "session", "id": "tree", "cwd": "/fuzz"}
    if version is not None:
        header["version"] = version
    records = [header] + [
        _entry(kind, entry_id, parent, target, number)
        for number, (kind, entry_id, parent, target) in enumerate(entries)
    ]
    with tempfile.TemporaryDirectory() as base, no_hang():
        agent = Path(base)
        path = agent / "sessions" / "--fuzz--" / "tree.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"".join(dumps(record) + b"\n" for record in records))
        loaded = load_session(str(path), new_id=synthetic_ids_for(str(path))).entries
        body = loaded[find_header_index(loaded) + 1 :]
        with SessionIndex.open(str(agent)) as index:
            index.sync()
            assert index.verify().clean
            session = index.find_session("tree")
            for leaf in [*{entry.get("id") for entry in body if entry.get("id")}, None]:
                expected = build_session_context(body, leaf or session.last_entry_id)
                assert same_context(index.context(session, leaf), expected), leaf
        with mock.patch.dict("os.environ", {"XCSH_AGENT_DIR": base}):
            manager = SessionManager.open(str(path))
            known = {entry.get("id") for entry in manager.get_entries()} - {None}
            assert sorted(tree_ids(manager)) == sorted(known), "the tree lost or repeated one"
            manager.build_session_context()
            manager.close()


# Trees grown over several syncs. Mostly parents come before children and ids are unique, so
# the index follows them by chains (migration 0002); now and then one line breaks that and the
# index must fall back to walking parent links.
_ANOMALIES = ["forward", "repeat", "orphan", "self"]
_grown = st.lists(
    st.tuples(
        st.sampled_from(_KINDS),
        st.one_of(st.just(-1), st.integers(min_value=0, max_value=40), st.none()),  # parent
        st.integers(min_value=0, max_value=40),  # what a compaction keeps, a label targets
        st.booleans(),  # sync after this entry
        st.one_of(st.just(None), st.just(None), st.just(None), st.sampled_from(_ANOMALIES)),
    ),
    min_size=1,
    max_size=30,
)


def _chainable(lines: list[tuple[str, str | None]]) -> bool:
    """The rule of migration 0002: no id twice, none its own parent, none named as a parent
    before it appears."""
    seen: set[str] = set()
    named: set[str] = set()
    for entry_id, parent_id in lines:
        if entry_id in seen or entry_id in named or entry_id == parent_id:
            return False
        seen.add(entry_id)
        if parent_id is not None and parent_id not in seen:
            named.add(parent_id)
    return True


@settings(max_examples=examples(60), deadline=None)
@given(plan=_grown)
def test_trees_grown_over_many_syncs_give_the_loaders_context_for_every_leaf(plan):
    """Parent -1 is the entry just before, n the n-th entry so far, None a new root."""
    lines: list[tuple[str, str | None]] = []
    with tempfile.TemporaryDirectory() as base, no_hang():
        agent = Path(base)
        path = agent / "sessions" / "--fuzz--" / "grown.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(
            dumps({"type": "session", "version": 3, "id": "grown", "cwd": "/"}) + b"\n"
        )
        with SessionIndex.open(str(agent)) as index:
            for number, (kind, parent, target, sync_now, anomaly) in enumerate(plan):
                ids = [entry_id for entry_id, _ in lines]
                entry_id = f"e{number}"
                parent_id = None if parent is None or not ids else ids[parent % len(ids)]
                if anomaly == "forward":
                    parent_id = f"e{number + 1}"
                elif anomaly == "orphan":
                    parent_id = "ghost"
                elif anomaly == "self":
                    parent_id = entry_id
                elif anomaly == "repeat" and ids:
                    entry_id = ids[target % len(ids)]
                kept = ids[target % len(ids)] if ids else entry_id
                lines.append((entry_id, parent_id))
                with path.open("ab") as stream:
                    stream.write(dumps(_entry(kind, entry_id, parent_id, kept, number)) + b"\n")
                if not (sync_now or number == len(plan) - 1):
                    continue
                index.sync()
                verification = index.verify()
                assert verification.clean, verification.differences
                chained = index.connection.execute("SELECT chained FROM files").fetchall()
                assert chained == [(int(_chainable(lines)),)]
                loaded = load_session(str(path)).entries[1:]
                session = index.find_session("grown")
                for leaf in {*ids, entry_id, None}:
                    expected = build_session_context(loaded, leaf or session.last_entry_id)
                    assert same_context(index.context(session, leaf), expected), leaf
                    if leaf is not None:
                        branch = [row.id for row in index.branch(session, leaf)]
                        assert branch == [entry["id"] for entry in manager_path(loaded, leaf)]


def manager_path(entries: list[dict[str, Any]], leaf: str) -> list[dict[str, Any]]:
    by_id = index_by_id(entries)
    return path_to_root(by_id[leaf], by_id)


# --------------------------------------------------------------------------------------------
# The persistence transform

_big_text = st.sampled_from([10, MAX_PERSIST_CHARS - 1, MAX_PERSIST_CHARS + 1, 600_000]).map(
    lambda size: "é" * size
)
_image_block = st.binary(min_size=768, max_size=1500).map(
    lambda raw: {"type": "image", "data": base64.b64encode(raw).decode(), "mimeType": "image/png"}
)
_leaf = st.one_of(st.integers(), st.booleans(), st.none(), st.text(max_size=10), _image_block)
_keys = st.sampled_from(
    ["content", "data", "text", "lineCount", "partialJson", "jsonlEvents", "image_url",
     "thinkingSignature", "type", "details"]
)  # fmt: skip
_values = st.recursive(
    _leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_keys, children, max_size=4)
    ),
    max_leaves=12,
)


def _walk(value: Any) -> list[tuple[str | None, Any]]:
    """Every (key, value) pair below ``value``."""
    found, pending = [], [(None, value)]
    while pending:
        key, item = pending.pop()
        found.append((key, item))
        if isinstance(item, dict):
            pending.extend(item.items())
        elif isinstance(item, list):
            pending.extend((key, element) for element in item)
    return found


@settings(max_examples=examples(60), deadline=None)
@given(
    body=st.dictionaries(_keys, _values, max_size=5),
    images=st.lists(_image_block, max_size=3),
    big=st.one_of(st.none(), _big_text),
)
def test_the_persistence_transform_is_pure_bounded_idempotent_and_restorable(body, images, big):
    entry = {"type": "message", "id": "e1", "parentId": None, "timestamp": "t",
             "message": {"role": "user", "content": [*images, {"type": "text", "text": "x"}]},
             "extra": body}  # fmt: skip
    if big is not None:
        entry["message"]["big"] = big
    before = dumps(entry)
    with tempfile.TemporaryDirectory() as folder:
        store = BlobStore(folder)
        prepared = prepare_entry_for_persistence(entry, store)
        assert dumps(entry) == before, "the transform changed its input"
        again = prepare_entry_for_persistence(prepared, store)
        assert dumps(again) == dumps(prepared), "the transform is not idempotent"
        line = entry_to_line(entry, store)
        assert line == dumps(prepared) + b"\n"
        for key, value in _walk(prepared):
            assert key not in TRANSIENT_KEYS
            if isinstance(value, str):
                assert utf16_length(value) <= MAX_PERSIST_CHARS
        (stored,) = parse_jsonl_bytes(line)
        rehydrate_entry(stored, store)
        restored = stored["message"]["content"][: len(images)]
        for original, block in zip(images, restored, strict=True):
            raw = decode_base64_leniently(original["data"])
            assert block["data"] == base64.b64encode(raw).decode()


# --------------------------------------------------------------------------------------------
# The JSON query language: a path into a document finds what is there

# Not all digits (a path segment of digits is an array index) and no "]" (the query language
# ends a bracketed key at the first "]", quoted or not, like the reference).
_json_keys = st.text(min_size=1, max_size=8).filter(
    lambda key: not key.isdigit() and "]" not in key
)
_documents = st.recursive(
    st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none()),
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=4),
        st.dictionaries(_json_keys, children, min_size=1, max_size=4),
    ),
    max_leaves=15,
)


@settings(max_examples=examples(200), deadline=None)
@given(document=_documents, data=st.data())
def test_a_path_into_any_document_finds_the_value_there(document, data):
    segments, value = [], document
    while isinstance(value, dict | list) and data.draw(st.booleans()):
        if isinstance(value, dict):
            key = data.draw(st.sampled_from(sorted(value)))
            segments.append(quote(key, safe=""))
        else:
            key = data.draw(st.integers(0, len(value) - 1))
            segments.append(str(key))
        value = value[key]
    query = path_to_query("/" + "/".join(segments))
    assert apply_query(document, query) == value, query
