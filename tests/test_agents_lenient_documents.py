"""One bad character costs no document (issue 39 item 9): a lone surrogate escape (what
``JSON.stringify`` writes for an emoji it cut in two) or a byte that is not UTF-8 in an Amp
thread, a Gemini CLI chat document or an opencode part is read as U+FFFD, the rest of the
document as it is, as a JSONL line is (docs/reliability.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agent_homes import lay_out_documents
from session_builder import FIXTURES

from xcsh_store.format.jsonl import parse_document
from xcsh_store.index import SessionIndex

# JSON.stringify of a string cut inside an emoji: the escape of its first half alone.
LONE = rb"\ud83d"
NOT_UTF8 = b"\xff"


def damaged(source: Path, target: Path, *replacements: tuple[bytes, bytes]) -> None:
    data = source.read_bytes()
    for old, new in replacements:
        assert old in data, old
        data = data.replace(old, new)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def synced(agent_dir: Path) -> SessionIndex:
    (agent_dir / "sessions").mkdir(parents=True, exist_ok=True)
    index = SessionIndex.open(str(agent_dir))
    report = index.sync(workers=1)
    assert report.unreadable == {}, report.unreadable
    return index


def found(index: SessionIndex, word: str, text: str) -> bool:
    """Whether a hit of ``word`` shows ``text`` (the word marked ``[word]``)."""
    return any(text in hit.snippet for hit in index.search(word, limit=5))


def test_an_amp_thread_with_a_lone_surrogate_and_a_bad_byte_is_read(agent_dir: Path):
    threads = Path(os.environ["AMP_DATA_DIR"]) / "threads"
    damaged(
        FIXTURES / "amp" / "juspay__shooter__thread.json",
        threads / "T-amptest.json",
        (b"Read the file.", b"Read the file " + LONE + b"."),
        (b"Let me plan this.", b"Let me plan " + NOT_UTF8 + b" this."),
    )
    with synced(agent_dir) as index:
        assert found(index, "file", "the [file] \ufffd")
        assert found(index, "plan", "Let me [plan] \ufffd this.")


def test_a_gemini_chat_document_with_a_lone_surrogate_and_a_bad_byte_is_read(agent_dir: Path):
    (place,) = [path for path in lay_out_documents(Path(os.environ["HOME"]), ("gemini",))
                if "sess-uui" in path.name]  # fmt: skip
    damaged(
        FIXTURES / "gemini" / "wesm__agentsview__tool_calls.json",
        place,
        (b'"Read this file"', b'"Read this file ' + LONE + b'"'),
        (b'"Let me read it."', b'"Let me read ' + NOT_UTF8 + b' it."'),
    )
    with synced(agent_dir) as index:
        assert found(index, "file", "Read this [file] \ufffd")
        assert found(index, "let", "[Let] me read \ufffd it.")


def test_an_opencode_part_with_a_lone_surrogate_is_read(agent_dir: Path):
    (storage,) = lay_out_documents(Path(os.environ["HOME"]), ("opencode",))
    part = storage / "part" / "m_user_small" / "001.json"
    damaged(
        FIXTURES / "opencode" / "jazzyalex__agent-sessions__storage_v2" / part.relative_to(storage),
        part,
        (b'"Hello"', b'"Hello ' + LONE + NOT_UTF8 + b'"'),
    )
    with synced(agent_dir) as index:
        assert found(index, "hello", "[Hello] \ufffd\ufffd")


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b'{"a": "x"}', {"a": "x"}),
        (b'\xef\xbb\xbf{"a": 1}', {"a": 1}),
        (b'{"a": "\\ud800 and \\udfff"}', {"a": "\ufffd and \ufffd"}),
        (b'{"a": "\\ud83d\\ude00"}', {"a": "\U0001f600"}),
        (b'{"a": "\xc3"}', {"a": "\ufffd"}),
    ],
)
def test_a_document_is_parsed_leniently(data: bytes, value: object):
    assert parse_document(data) == value


def test_a_document_nested_deeper_than_orjson_goes_is_read():
    parsed = parse_document(b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}")["a"]
    depth = 1
    while parsed:
        parsed, depth = parsed[0], depth + 1
    assert depth == 5000


@pytest.mark.parametrize("data", [b"", b'{"a": ', b'{"a": 1} {"b": 2}', b"{not json"])
def test_what_is_not_one_json_value_is_refused(data: bytes):
    with pytest.raises(ValueError):
        parse_document(data)
