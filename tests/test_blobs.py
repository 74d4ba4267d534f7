"""The content-addressed blob store and blob refs."""

from __future__ import annotations

import base64
import hashlib
import os
import stat

import pytest

from xcsh_store.format.blobs import (
    decode_base64_leniently,
    externalize_image_data,
    is_blob_ref,
    parse_blob_ref,
    resolve_image_data,
)

DIGEST = hashlib.sha256(b"hello").hexdigest()


def test_put_returns_hash_path_and_ref(store):
    result = store.put(b"hello")
    assert result.hash == DIGEST
    assert result.path == os.path.join(store.dir, DIGEST)
    assert result.ref == f"blob:sha256:{DIGEST}"
    with open(result.path, "rb") as handle:
        assert handle.read() == b"hello"


def test_put_is_idempotent_and_leaves_no_temp_files(store):
    store.put(b"hello")
    store.put(b"hello")
    assert os.listdir(store.dir) == [DIGEST]


def test_put_repairs_a_blob_of_the_wrong_size(store):
    os.makedirs(store.dir)
    with open(os.path.join(store.dir, DIGEST), "wb") as handle:
        handle.write(b"hel")
    store.put(b"hello")
    assert store.get(DIGEST) == b"hello"


def test_blob_files_are_private(store):
    path = store.put(b"secret").path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.dir).st_mode) == 0o700


def test_get_and_has(store):
    store.put(b"hello")
    assert store.get(DIGEST) == b"hello"
    assert store.has(DIGEST)
    missing = "f" * 64
    assert store.get(missing) is None
    assert not store.has(missing)


@pytest.mark.parametrize("digest", ["../../etc/passwd", "A" * 64, "0" * 63, "", "0" * 64 + "/x"])
def test_nothing_is_served_for_a_malformed_hash(store, digest):
    assert store.get(digest) is None
    assert not store.has(digest)


@pytest.mark.parametrize(
    ("value", "digest"),
    [
        (f"blob:sha256:{DIGEST}", DIGEST),
        (f"blob:sha256:{DIGEST.upper()}", None),
        ("blob:sha256:../../x", None),
        (f"blob:sha256:{DIGEST}x", None),
        (f"blob:md5:{DIGEST}", None),
        (None, None),
        (42, None),
    ],
)
def test_parse_blob_ref(value, digest):
    assert parse_blob_ref(value) == digest


def test_is_blob_ref_is_a_prefix_test():
    assert is_blob_ref("blob:sha256:anything")
    assert not is_blob_ref("data:image/png;base64,")


@pytest.mark.parametrize(
    ("text", "raw"),
    [
        ("aGVsbG8=", b"hello"),
        ("aGVsbG8", b"hello"),
        ("aGV sbG8=\n", b"hello"),
        ("-_8=", b"\xfb\xff"),
        ("+/8=", b"\xfb\xff"),
        ("aGVsbG8=junk", b"hello"),
        ("a", b""),
    ],
)
def test_lenient_base64_like_node(text, raw):
    assert decode_base64_leniently(text) == raw


def test_image_round_trip_gives_canonical_base64(store):
    raw = os.urandom(3000)
    ref = externalize_image_data(store, base64.urlsafe_b64encode(raw).decode().rstrip("="))
    assert resolve_image_data(store, ref) == base64.b64encode(raw).decode()


def test_resolving_a_plain_string_returns_it(store):
    assert resolve_image_data(store, "iVBORw0KGgo=") == "iVBORw0KGgo="
