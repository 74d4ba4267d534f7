"""The persistence transform: truncation, transient fields, blob externalisation, rehydration."""

from __future__ import annotations

import base64
import copy
import hashlib

from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from xcsh_store.format.jsonl import parse_line
from xcsh_store.format.persist import (
    MAX_PERSIST_CHARS,
    TRUNCATION_NOTICE,
    entry_to_line,
    prepare_entry_for_persistence,
    rehydrate_entry,
    truncate_for_persistence,
)
from xcsh_store.js import utf16_length


def test_notice_text():
    assert TRUNCATION_NOTICE == "\n\n[Session persistence truncated large content]"
    assert len(TRUNCATION_NOTICE) == 47


def test_short_strings_are_untouched():
    text = "x" * MAX_PERSIST_CHARS
    assert truncate_for_persistence(text) is text


def test_long_string_is_cut_to_exactly_the_limit():
    result = truncate_for_persistence("x" * (MAX_PERSIST_CHARS + 1))
    assert len(result) == MAX_PERSIST_CHARS
    assert result == "x" * 499_953 + TRUNCATION_NOTICE


def test_length_is_measured_in_utf16_units():
    emoji = "😀"  # two UTF-16 units
    text = emoji * 250_001
    assert utf16_length(text) == 500_002
    result = truncate_for_persistence(text)
    assert result.endswith(TRUNCATION_NOTICE)
    # 499,953 units would end in half a pair, so that half is dropped: 499,952 + 47.
    assert utf16_length(result) == 499_999
    assert result[:-47] == emoji * 249_976


def test_signature_fields_are_emptied_instead():
    for key in ("thinkingSignature", "thoughtSignature", "textSignature"):
        assert truncate_for_persistence("s" * 600_000, key) == ""


@settings(max_examples=examples(20), deadline=None)
@given(
    st.lists(st.sampled_from(["a", "é", "😀", "\ud800", "中"]), min_size=1, max_size=4),
    st.integers(min_value=0, max_value=4),
)
def test_truncation_never_exceeds_the_limit_nor_splits_a_pair(pieces, shift):
    unit = "".join(pieces)
    text = "a" * shift + unit * (MAX_PERSIST_CHARS // max(1, utf16_length(unit)) + 2)
    result = truncate_for_persistence(text)
    assert utf16_length(result) <= MAX_PERSIST_CHARS
    body = result[: -len(TRUNCATION_NOTICE)]
    # Python keeps a pair as one code point: half of one would make body no longer a prefix.
    assert text.startswith(body)


def test_transient_fields_are_dropped_at_any_depth(store):
    entry = {
        "type": "message",
        "message": {"content": [{"type": "toolCall", "partialJson": "{", "name": "x"}]},
        "jsonlEvents": [1],
    }
    prepared = prepare_entry_for_persistence(entry, store)
    assert prepared == {
        "type": "message",
        "message": {"content": [{"type": "toolCall", "name": "x"}]},
    }


def test_line_count_is_recomputed_after_truncation(store):
    entry = {"details": {"content": "a\n" * 300_000, "lineCount": 300_001}}
    prepared = prepare_entry_for_persistence(entry, store)
    content = prepared["details"]["content"]
    assert prepared["details"]["lineCount"] == content.count("\n") + 1
    assert prepared["details"]["lineCount"] < 300_001


def test_unchanged_entry_is_returned_as_is(store):
    entry = {"type": "message", "message": {"content": [{"type": "text", "text": "hi"}]}}
    assert prepare_entry_for_persistence(entry, store) is entry


def _image(size: int) -> dict:
    raw = bytes(range(256)) * (size // 256 + 1)
    return {"type": "image", "data": base64.b64encode(raw[:size]).decode(), "mimeType": "image/png"}


def test_big_image_blocks_in_content_arrays_are_externalised_at_any_depth(store):
    image = _image(2000)
    entry = {
        "type": "message",
        "message": {"role": "toolResult", "content": [image], "details": {"content": [image]}},
    }
    original = copy.deepcopy(entry)
    prepared = prepare_entry_for_persistence(entry, store)
    raw = base64.b64decode(image["data"])
    ref = "blob:sha256:" + hashlib.sha256(raw).hexdigest()
    assert prepared["message"]["content"][0] == {
        "type": "image",
        "data": ref,
        "mimeType": "image/png",
    }
    assert prepared["message"]["details"]["content"][0]["data"] == ref
    assert store.get(ref.split(":")[-1]) == raw
    assert entry == original, "the in-memory entry is never mutated"


def test_small_images_and_images_outside_content_stay_inline(store):
    small = {"type": "image", "data": "a" * 1023}
    elsewhere = {"files": [{"image": _image(2000)}], "content": [small]}
    assert prepare_entry_for_persistence(elsewhere, store) is elsewhere


def test_image_url_data_urls_are_externalised_whatever_their_size(store):
    url = "data:image/png;base64,AAAA"
    entry = {"message": {"content": [{"type": "image_url", "image_url": url}]}}
    prepared = prepare_entry_for_persistence(entry, store)
    ref = prepared["message"]["content"][0]["image_url"]
    assert ref == "blob:sha256:" + hashlib.sha256(url.encode()).hexdigest()
    assert store.get(ref[12:]) == url.encode()


def test_rehydration_restores_top_level_images_and_image_urls(store):
    image = _image(3000)
    url = "data:image/jpeg;base64,/9j/"
    entry = {
        "type": "message",
        "message": {
            "content": [image, {"type": "x", "image_url": url}],
            "details": {"content": [image]},
        },
    }
    prepared = prepare_entry_for_persistence(entry, store)
    loaded = parse_line(entry_to_line(prepared, store))[0]
    rehydrate_entry(loaded, store)
    assert loaded["message"]["content"][0]["data"] == image["data"]
    assert loaded["message"]["content"][1]["image_url"] == url
    # Only top-level content arrays are restored, like the reference.
    assert loaded["message"]["details"]["content"][0]["data"].startswith("blob:sha256:")


def test_custom_message_images_are_restored(store):
    image = _image(1500)
    entry = {"type": "custom_message", "content": [image]}
    loaded = parse_line(entry_to_line(entry, store))[0]
    assert loaded["content"][0]["data"].startswith("blob:sha256:")
    rehydrate_entry(loaded, store)
    assert loaded["content"][0]["data"] == image["data"]


def test_missing_blob_keeps_the_ref_and_warns(store, caplog):
    ref = "blob:sha256:" + "0" * 64
    entry = {"type": "message", "message": {"content": [{"type": "image", "data": ref}]}}
    rehydrate_entry(entry, store)
    assert entry["message"]["content"][0]["data"] == ref
    assert "Blob not found" in caplog.text


def test_entry_to_line_matches_the_full_transform(store):
    entry = {"type": "message", "message": {"content": [_image(5000)], "partialJson": "x"}}
    line = entry_to_line(entry, store)
    assert line.endswith(b"\n")
    assert parse_line(line)[0] == prepare_entry_for_persistence(entry, store)


def test_entry_to_line_truncates_big_strings(store):
    line = entry_to_line({"text": "y" * 600_000}, store)
    assert len(parse_line(line)[0]["text"]) == MAX_PERSIST_CHARS


def test_very_deep_entries_do_not_crash_the_transform(store):
    value: dict = {"content": "leaf"}
    for _ in range(5_000):
        value = {"nested": value}
    assert prepare_entry_for_persistence(value, store) is value
    assert entry_to_line({"partialJson": 1, "deep": value}, store).startswith(b'{"deep":')
