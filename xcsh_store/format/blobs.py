"""The content-addressed blob store: ``<agent>/blobs/<sha256>`` holding raw bytes."""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import re
from dataclasses import dataclass
from typing import TypeGuard

from xcsh_store.files import open_regular_file
from xcsh_store.format.storage import fsync_dir, remove_quietly
from xcsh_store.paths import FILE_MODE, ensure_private_dir, new_session_id

log = logging.getLogger("xcsh_store")

BLOB_REF_PREFIX = "blob:sha256:"
_HASH = re.compile(r"[0-9a-f]{64}")
# A blob being written: ".<sha256>.<16 hex>.tmp"; it only gets its hash name once it is whole.
BLOB_TEMP_NAME = re.compile(r"\.[0-9a-f]{64}\.[0-9a-f]{16}\.tmp")
_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/]")
_URL_SAFE = str.maketrans("-_", "+/")


@dataclass(frozen=True, slots=True)
class BlobPutResult:
    hash: str
    path: str
    ref: str


def is_blob_ref(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value.startswith(BLOB_REF_PREFIX)


def parse_blob_ref(value: object) -> str | None:
    """The hash of a well-formed ref (``blob:sha256:`` + 64 lowercase hex), else None."""
    if not is_blob_ref(value):
        return None
    digest = value[len(BLOB_REF_PREFIX) :]
    return digest if _HASH.fullmatch(digest) else None


def is_image_data_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith("data:image/") and ";base64," in value


def decode_base64_leniently(text: str) -> bytes:
    """Decode like Node's ``Buffer.from(s, "base64")``: both alphabets, junk ignored."""
    cleaned = _NOT_BASE64.sub("", text.split("=", 1)[0].translate(_URL_SAFE))
    remainder = len(cleaned) % 4
    if remainder == 1:
        cleaned = cleaned[:-1]
    elif remainder:
        cleaned += "=" * (4 - remainder)
    try:
        return base64.b64decode(cleaned)
    except binascii.Error:
        return b""


class BlobStore:
    """Blobs are written under a temporary name and renamed, so a valid name is always whole."""

    def __init__(self, directory: str) -> None:
        self.dir = directory

    def path_for(self, digest: str) -> str:
        return os.path.join(self.dir, digest)

    def put(self, data: bytes) -> BlobPutResult:
        digest = hashlib.sha256(data).hexdigest()
        path = self.path_for(digest)
        if not self._refresh(path, len(data)):
            ensure_private_dir(self.dir)
            temp = os.path.join(self.dir, f".{digest}.{new_session_id()}.tmp")
            try:
                descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temp, path)
            except BaseException:
                remove_quietly(temp)
                raise
            fsync_dir(self.dir)
        return BlobPutResult(digest, path, BLOB_REF_PREFIX + digest)

    @staticmethod
    def _refresh(path: str, size: int) -> bool:
        """True when a whole copy exists; its mtime is renewed so a GC grace period covers it."""
        try:
            if os.stat(path).st_size != size:
                return False
            os.utime(path)
        except OSError:
            return False  # missing, or removed by a GC in between: write it again
        return True

    def get(self, digest: str) -> bytes | None:
        """The blob's bytes; None when it is missing or the hash is malformed."""
        if not _HASH.fullmatch(digest):
            return None
        try:
            with open_regular_file(self.path_for(digest)) as handle:
                return handle.read()
        except FileNotFoundError:
            return None

    def has(self, digest: str) -> bool:
        return bool(_HASH.fullmatch(digest)) and os.path.isfile(self.path_for(digest))


def externalize_image_data(store: BlobStore, b64: str) -> str:
    """Store base64 image data as raw bytes; returns the ``blob:sha256:`` ref."""
    return store.put(decode_base64_leniently(b64)).ref


def externalize_image_data_url(store: BlobStore, data_url: str) -> str:
    """Store a whole ``data:image/...;base64,`` URL as its UTF-8 text."""
    return store.put(data_url.encode("utf-8")).ref


def resolve_image_data(store: BlobStore, value: str) -> str:
    """Base64 of the referenced blob; the ref itself (with a warning) when the blob is missing."""
    data = _read_ref(store, value)
    if data is None:
        if is_blob_ref(value):
            log.warning("Blob not found for image reference %s", value)
        return value
    return base64.b64encode(data).decode("ascii")


def resolve_image_data_url(store: BlobStore, value: str) -> str:
    data = _read_ref(store, value)
    if data is None:
        if is_blob_ref(value):
            log.warning("Blob not found for persisted image data URL %s", value)
        return value
    return data.decode("utf-8", "replace")


def _read_ref(store: BlobStore, value: str) -> bytes | None:
    digest = parse_blob_ref(value)
    if digest is None:
        return None
    try:
        return store.get(digest)
    except OSError as error:
        log.warning("Blob %s could not be read: %s", digest, error)
        return None
