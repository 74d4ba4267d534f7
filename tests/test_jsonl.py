"""Lenient JSONL reading and JSON.stringify-exact writing."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import pytest
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from xcsh_store.format.jsonl import (
    iter_lines,
    iter_records,
    parse_jsonl_bytes,
    parse_line,
    read_jsonl_file,
)
from xcsh_store.js import stringify as dumps

# --------------------------------------------------------------------------------------------
# Reading


def test_valid_lines_give_objects():
    assert parse_jsonl_bytes(b'{"a":1}\n{"b":2}\n') == [{"a": 1}, {"b": 2}]


def test_malformed_line_is_skipped_and_parsing_resumes():
    data = b'{"a":1}\n{ this is : not json ]\n{"b":2}\n'
    assert parse_jsonl_bytes(data) == [{"a": 1}, {"b": 2}]


def test_empty_and_whitespace_lines_are_ignored():
    assert parse_jsonl_bytes(b'\n  \n{"a":1}\n\t\r\n\n') == [{"a": 1}]


def test_cut_last_line_is_dropped_but_complete_unterminated_line_kept():
    assert parse_jsonl_bytes(b'{"a":1}\n{"b":') == [{"a": 1}]
    assert parse_jsonl_bytes(b'{"a":1}\n{"b":2}') == [{"a": 1}, {"b": 2}]


def test_empty_input():
    assert parse_jsonl_bytes(b"") == []


def test_leading_bom_is_skipped():
    assert parse_jsonl_bytes(b'\xef\xbb\xbf{"a":1}\n') == [{"a": 1}]


@pytest.mark.parametrize("line", [b"1", b'"text"', b"[1,2]", b"null", b"true"])
def test_values_that_are_not_objects_are_skipped(line):
    assert parse_jsonl_bytes(line + b'\n{"a":1}\n') == [{"a": 1}]


def test_invalid_utf8_is_replaced_and_the_line_still_parses():
    assert parse_line(b'{"text":"caf\xe9 \xff"}') == [{"text": "caf\ufffd \ufffd"}]


def test_nul_byte_outside_json_makes_only_that_line_malformed():
    data = b'{"a":1}\n\x00{"b":2}\n{"c":3}\n'
    assert parse_jsonl_bytes(data) == [{"a": 1}, {"c": 3}]


def test_escaped_nul_inside_a_string_is_data():
    assert parse_line(b'{"a":"x\\u0000y"}') == [{"a": "x\x00y"}]


def test_glued_objects_on_one_line_are_both_recovered():
    line = b'{"type":"message","id":"a"}{"type":"compaction","id":"b"}'
    assert parse_line(line) == [{"type": "message", "id": "a"}, {"type": "compaction", "id": "b"}]


def test_garbage_after_the_last_value_is_dropped():
    assert parse_line(b'{"a":1} {"b":2}xyz') == [{"a": 1}, {"b": 2}]


def test_lone_surrogate_escapes_are_accepted_like_json_parse():
    assert parse_line(b'{"a":"\\ud800x"}') == [{"a": "\ud800x"}]


def test_nan_and_infinity_are_not_json():
    assert parse_line(b'{"a":NaN}') == []
    assert parse_line(b'{"a":Infinity}') == []


def test_duplicate_keys_last_one_wins():
    assert parse_line(b'{"a":1,"a":2}') == [{"a": 2}]


def _depth(value):
    depth = 0
    while isinstance(value, list) and value:
        value = value[0]
        depth += 1
    return depth


def test_deep_nesting_is_parsed_without_recursion():
    depth = 50_000
    line = b'{"deep":' + b"[" * depth + b"1" + b"]" * depth + b',"after":true}'
    (value,) = parse_line(line)
    assert value["after"] is True
    assert _depth(value["deep"]) == depth


def test_deep_nesting_round_trips_through_the_writer():
    depth = 20_000
    line = b'{"deep":' + b"[" * depth + b"]" * depth + b"}"
    (value,) = parse_line(line)
    assert dumps(value) == line


def test_deep_object_nesting_is_parsed():
    depth = 5_000
    line = b'{"k":' * depth + b'"leaf"' + b"}" * depth
    (value,) = parse_line(line)
    for _ in range(depth - 1):
        value = value["k"]
    assert value == {"k": "leaf"}


def test_a_50_mb_line_loads():
    text = "x" * (50 * 1024 * 1024)
    data = b'{"a":1}\n{"big":"' + text.encode() + b'"}\n{"b":2}\n'
    values = parse_jsonl_bytes(data)
    assert [len(value.get("big", "")) for value in values] == [0, len(text), 0]


def test_iter_lines_reports_offsets_and_skips_the_bom():
    stream = io.BytesIO(b'\xef\xbb\xbf{"a":1}\n\n{"b":2}\n{"c"')
    assert list(iter_lines(stream)) == [
        (3, b'{"a":1}\n'),
        (11, b"\n"),
        (12, b'{"b":2}\n'),
        (20, b'{"c"'),
    ]
    assert list(iter_lines(stream, 12, include_unterminated=False)) == [(12, b'{"b":2}\n')]


def test_iter_lines_across_chunk_boundaries(monkeypatch):
    monkeypatch.setattr("xcsh_store.format.jsonl.READ_CHUNK", 7)
    lines = [b'{"n":%d,"pad":"%s"}\n' % (n, b"p" * n) for n in range(40)]
    stream = io.BytesIO(b"".join(lines))
    assert [line for _offset, line in iter_lines(stream)] == lines


def test_iter_records_skips_blank_lines_and_keeps_malformed_ones():
    stream = io.BytesIO(b'{"a":1}\n\nnope\n{"b":2}{"c":3}\n')
    records = list(iter_records(stream))
    assert [(r.offset, r.length, r.values) for r in records] == [
        (0, 8, [{"a": 1}]),
        (9, 5, []),
        (14, 15, [{"b": 2}, {"c": 3}]),
    ]


def test_read_jsonl_file(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\nbad\n{"b":2}')
    assert read_jsonl_file(str(path)) == [{"a": 1}, {"b": 2}]


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise(data):
    values = parse_jsonl_bytes(data)
    assert all(isinstance(value, dict) for value in values)
    assert read_jsonl_via_stream(data) == values


def read_jsonl_via_stream(data: bytes):
    values = []
    for record in iter_records(io.BytesIO(data)):
        values.extend(record.values)
    return values


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.one_of(
            st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
            st.text(max_size=30),
        ),
        max_size=10,
    )
)
def test_no_valid_object_line_is_lost_among_garbage(items):
    lines, expected = [], []
    for item in items:
        if isinstance(item, dict):
            lines.append(json.dumps(item).encode())
            expected.append(item)
        else:
            lines.append(item.replace("\n", " ").encode("utf-8", "replace"))
    values = [_as_javascript_sees_it(value) for value in parse_jsonl_bytes(b"\n".join(lines))]
    # Garbage lines may themselves be JSON objects; every real object must still be there, in
    # order (integers beyond 64 bits come back as doubles, as in JavaScript).
    iterator = iter(values)
    assert all(
        any(value == _as_javascript_sees_it(wanted) for value in iterator) for wanted in expected
    )


# --------------------------------------------------------------------------------------------
# Writing

# Integers beyond 2**53 are written exactly (JavaScript would round them), so the comparison with
# node stays within the safe integer range.
_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
_json_values = st.recursive(
    _json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)
_entries = st.dictionaries(st.text(max_size=10), _json_values, max_size=8)

# JavaScript objects list integer-like keys first whatever the insertion order; agents' own data
# already has that order, so the comparison with node leaves such keys out.
_js_keys = st.text(max_size=10).filter(lambda key: not key.isdigit())
_js_values = st.recursive(
    _json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(_js_keys, children, max_size=5)
    ),
    max_leaves=30,
)
_js_entries = st.dictionaries(_js_keys, _js_values, max_size=8)


def _as_javascript_sees_it(value):
    """Numbers as JavaScript doubles: 1e16 is written 10000000000000000 and reads back as int."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [_as_javascript_sees_it(item) for item in value]
    return {key: _as_javascript_sees_it(item) for key, item in value.items()}


@settings(max_examples=examples(200), deadline=None)
@given(_entries)
def test_any_json_entry_round_trips_through_writer_and_reader(entry):
    line = dumps(entry) + b"\n"
    assert b"\n" not in line[:-1]
    (value,) = parse_jsonl_bytes(line)
    assert _as_javascript_sees_it(value) == _as_javascript_sees_it(entry)


def test_writer_is_compact_and_keeps_non_ascii_raw():
    entry = {"type": "message", "text": "café 😀", "n": [1, 2.5, None, True]}
    assert dumps(entry) == '{"type":"message","text":"café 😀","n":[1,2.5,null,true]}'.encode()


def test_writer_escapes_like_json_stringify():
    text = '\x00\x01\b\f\n\r\t\x1f\x7f\u2028"\\/'
    assert dumps(text) == b'"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\x7f\xe2\x80\xa8\\"\\\\/"'


def test_writer_escapes_lone_surrogates():
    assert dumps({"a": "\ud800x\udc00"}) == b'{"a":"\\ud800x\\udc00"}'


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, b"1"),
        (-0.0, b"0"),
        (100.0, b"100"),
        (1e16, b"10000000000000000"),
        (1.2345678901234568e20, b"123456789012345680000"),
        (1e21, b"1e+21"),
        (1e-6, b"0.000001"),
        (4.823040373928001e-06, b"0.000004823040373928001"),
        (1e-7, b"1e-7"),
        (0.000015, b"0.000015"),
        (0.1, b"0.1"),
        (float("nan"), b"null"),
        (float("inf"), b"null"),
    ],
)
def test_numbers_are_written_like_javascript(number, text):
    assert dumps({"n": number}) == b'{"n":' + text + b"}"


def test_key_order_is_kept():
    assert dumps({"b": 1, "a": 2}) == b'{"b":1,"a":2}'


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@settings(max_examples=examples(25), deadline=None)
@given(st.lists(_js_entries, min_size=1, max_size=40))
def test_writer_matches_node_json_stringify(entries):
    payload = b"\n".join(dumps(entry) for entry in entries) + b"\n"
    script = (
        "const lines = require('fs').readFileSync(0, 'utf8').split('\\n').filter(Boolean);"
        "process.stdout.write(lines.map(l => JSON.stringify(JSON.parse(l))).join('\\n') + '\\n');"
    )
    result = subprocess.run(["node", "-e", script], input=payload, capture_output=True, check=True)
    assert result.stdout == payload
