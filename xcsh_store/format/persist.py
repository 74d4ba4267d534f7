"""What happens to an entry on its way to disk and back: size limits and blob externalisation."""

from __future__ import annotations

import logging
import re
from typing import Any

from xcsh_store.format.blobs import (
    BlobStore,
    externalize_image_data,
    externalize_image_data_url,
    is_blob_ref,
    is_image_data_url,
    resolve_image_data,
    resolve_image_data_url,
)
from xcsh_store.js import stringify, utf16_length

log = logging.getLogger("xcsh_store")

MAX_PERSIST_CHARS = 500_000
TRUNCATION_NOTICE = "\n\n[Session persistence truncated large content]"
BLOB_EXTERNALIZE_THRESHOLD = 1024
TEXT_CONTENT_KEY = "content"
TRANSIENT_KEYS = frozenset({"partialJson", "jsonlEvents"})
SIGNATURE_KEYS = frozenset({"thinkingSignature", "thoughtSignature", "textSignature"})

# Deeper than this the transform leaves values alone instead of overflowing the stack; only
# hostile input nests that deep.
MAX_TRANSFORM_DEPTH = 400

# A serialised entry that is shorter than the limit and mentions none of these needs no
# transform at all, which is the case for nearly every entry.
_NEEDS_TRANSFORM = re.compile(rb'"(?:image|image_url|partialJson|jsonlEvents)"')


def truncate_for_persistence(text: str, key: str | None = None) -> str:
    """Cut a string longer than 500,000 UTF-16 units, never splitting a surrogate pair."""
    if len(text) * 2 <= MAX_PERSIST_CHARS or utf16_length(text) <= MAX_PERSIST_CHARS:
        return text
    if key in SIGNATURE_KEYS:
        return ""
    keep_units = MAX_PERSIST_CHARS - len(TRUNCATION_NOTICE)
    if text.isascii():
        return text[:keep_units] + TRUNCATION_NOTICE
    units = text.encode("utf-16-le", "surrogatepass")[: keep_units * 2]
    if 0xD800 <= int.from_bytes(units[-2:], "little") <= 0xDBFF:
        units = units[:-2]  # half of a pair: drop it rather than write a lone surrogate
    return units.decode("utf-16-le", "surrogatepass") + TRUNCATION_NOTICE


def _is_image_block(item: Any) -> bool:
    return (
        type(item) is dict
        and item.get("type") == "image"
        and isinstance(item.get("data"), str)
        and not is_blob_ref(item["data"])
        and len(item["data"]) >= BLOB_EXTERNALIZE_THRESHOLD
    )


def _transform(value: Any, key: str | None, store: BlobStore, depth: int) -> Any:
    """The reference transform T(value, key); returns ``value`` itself when nothing changed."""
    kind = type(value)
    if kind is str:
        if key == "image_url" and is_image_data_url(value):
            return externalize_image_data_url(store, value)
        return truncate_for_persistence(value, key)
    if depth > MAX_TRANSFORM_DEPTH:
        return value
    if kind is list:
        result = None
        for index, item in enumerate(value):
            if key == TEXT_CONTENT_KEY and _is_image_block(item):
                new_item = {**item, "data": externalize_image_data(store, item["data"])}
            else:
                new_item = _transform(item, key, store, depth + 1)
            if new_item is not item:
                if result is None:
                    result = list(value)
                result[index] = new_item
        return value if result is None else result
    if kind is dict:
        changed = False
        out: dict[str, Any] = {}
        for item_key, item in value.items():
            if item_key in TRANSIENT_KEYS:
                changed = True
                continue
            new_item = _transform(item, item_key, store, depth + 1)
            changed = changed or new_item is not item
            out[item_key] = new_item
        if not changed:
            return value
        line_count = out.get("lineCount")
        if (
            isinstance(out.get("content"), str)
            and isinstance(line_count, (int, float))
            and not isinstance(line_count, bool)
        ):
            out["lineCount"] = out["content"].count("\n") + 1
        return out
    return value


def prepare_entry_for_persistence(entry: dict[str, Any], blob_store: BlobStore) -> dict[str, Any]:
    """The entry as it must be written; ``entry`` itself is never modified (compatibility:
    Persistence as in the reference)."""
    return _transform(entry, None, blob_store, 0)


def entry_to_line(entry: dict[str, Any], blob_store: BlobStore) -> bytes:
    """The file line for ``entry``, with the transform applied only when it can matter."""
    data = stringify(entry)
    if len(data) > MAX_PERSIST_CHARS or _NEEDS_TRANSFORM.search(data):
        prepared = prepare_entry_for_persistence(entry, blob_store)
        if prepared is not entry:
            data = stringify(prepared)
    return data + b"\n"


def rehydrate_entry(entry: dict[str, Any], blob_store: BlobStore) -> None:
    """Resolve blob refs back to image data in a freshly loaded entry, in place.

    Only the top-level content arrays of ``message`` and ``custom_message`` entries and
    ``image_url`` values anywhere are restored, like the reference. Missing blobs keep their ref.
    """
    kind = entry.get("type")
    content = None
    if kind == "message" and type(entry.get("message")) is dict:
        content = entry["message"].get("content")
    elif kind == "custom_message":
        content = entry.get("content")
    if type(content) is list:
        for block in content:
            if type(block) is not dict or block.get("type") != "image":
                continue
            if is_blob_ref(block.get("data")):
                block["data"] = resolve_image_data(blob_store, block["data"])
    _resolve_image_urls(entry, blob_store)


def _resolve_image_urls(value: Any, blob_store: BlobStore) -> None:
    pending = [value]
    while pending:
        current = pending.pop()
        if type(current) is dict:
            url = current.get("image_url")
            if is_blob_ref(url):
                current["image_url"] = resolve_image_data_url(blob_store, url)
            pending.extend(item for item in current.values() if type(item) in (dict, list))
        elif type(current) is list:
            pending.extend(item for item in current if type(item) in (dict, list))
