"""Property tests the other test files lack: the three JSONL readers agree on any bytes, random
trees (cycles, duplicates, legacy versions) give the same context from the index as from the
loader and never hang, the persistence transform, and the JSON query language round trip.

Example counts are CI-sized; ``XCSH_FUZZ_SCALE`` (benchmarks/stress.py) multiplies them.
"""

from __future__ import annotations

import io
import tempfile
from unittest import mock

from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from xcsh_store import jsonl as jsonl_module
from xcsh_store import loader as loader_module
from xcsh_store.jsonl import dumps, iter_records, parse_jsonl_bytes
from xcsh_store.loader import read_session_file

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
