"""File and memory session storage, writers, and atomic rewrites."""

from __future__ import annotations

import gc
import os
import stat
import sys

import pytest

from xcsh_store.format.storage import (
    FileSessionStorage,
    FileSessionStorageWriter,
    MemorySessionStorage,
    SessionStorage,
    SessionStorageWriter,
    WriterClosedError,
    write_atomically,
)


@pytest.fixture(params=["file", "memory"])
def storage(request) -> SessionStorage:
    return FileSessionStorage() if request.param == "file" else MemorySessionStorage()


def test_both_storages_satisfy_the_protocol(storage, tmp_path):
    assert isinstance(storage, SessionStorage)
    assert isinstance(storage.open_writer(str(tmp_path / "w.jsonl")), SessionStorageWriter)


def test_write_read_stat(storage, tmp_path):
    path = str(tmp_path / "dir" / "a.jsonl")
    storage.write_text(path, "héllo\n")
    assert storage.exists(path)
    assert storage.read_text(path) == "héllo\n"
    assert storage.stat(path).size == 7  # bytes (compatibility: Memory storage behaves like files)
    assert storage.read_text_prefix(path, 2) == "h\ufffd"


def test_bom_is_stripped_when_reading_text(storage, tmp_path):
    path = str(tmp_path / "bom.jsonl")
    storage.write_text(path, "\ufeff{}\n")
    assert storage.read_text(path) == "{}\n"


def test_missing_files_behave_like_enoent(storage, tmp_path):
    path = str(tmp_path / "missing.jsonl")
    assert not storage.exists(path)
    for call in (storage.read_text, storage.read_bytes, storage.stat):
        with pytest.raises(FileNotFoundError):
            call(path)


def test_list_files_matches_the_pattern_without_dotfiles(storage, tmp_path):
    folder = str(tmp_path / "s")
    for name in ("b.jsonl", "a.jsonl", ".a.jsonl.tmp", ".hidden.jsonl", "c.txt"):
        storage.write_text(os.path.join(folder, name), "x")
    storage.write_text(os.path.join(folder, "sub", "d.jsonl"), "x")
    assert storage.list_files(folder, "*.jsonl") == [
        os.path.join(folder, "a.jsonl"),
        os.path.join(folder, "b.jsonl"),
    ]


def test_list_files_of_a_missing_folder_is_empty(storage, tmp_path):
    assert storage.list_files(str(tmp_path / "nope"), "*.jsonl") == []


def test_rename_and_unlink(storage, tmp_path):
    source, target = str(tmp_path / "a"), str(tmp_path / "b")
    storage.write_text(source, "x")
    storage.rename(source, target)
    assert not storage.exists(source)
    assert storage.read_text(target) == "x"
    storage.unlink(target)
    assert not storage.exists(target)


def test_rename_of_a_vanished_file_is_an_error(storage, tmp_path):
    with pytest.raises(FileNotFoundError):
        storage.rename(str(tmp_path / "gone"), str(tmp_path / "b"))


def test_append_writer(storage, tmp_path):
    path = str(tmp_path / "w.jsonl")
    storage.write_text(path, "1\n")
    writer = storage.open_writer(path)
    writer.write_line(b"2\n")
    writer.write_line("3\n")
    writer.flush()
    writer.fsync()
    writer.close()
    writer.close()
    assert storage.read_text(path) == "1\n2\n3\n"
    assert writer.get_error() is None
    with pytest.raises(WriterClosedError, match="Writer closed"):
        writer.write_line(b"4\n")


def test_truncating_writer(storage, tmp_path):
    path = str(tmp_path / "w.jsonl")
    storage.write_text(path, "old\n")
    writer = storage.open_writer(path, "w")
    writer.write_line(b"new\n")
    writer.close()
    assert storage.read_text(path) == "new\n"


def test_file_writer_latches_the_first_error(tmp_path):
    path = str(tmp_path / "w.jsonl")
    writer = FileSessionStorage().open_writer(path)
    os.close(writer._fd)  # the descriptor goes bad under the writer
    with pytest.raises(OSError) as first:
        writer.write_line(b"x\n")
    assert writer.get_error() is first.value
    with pytest.raises(OSError) as second:
        writer.fsync()
    assert second.value is first.value
    writer._fd = None


def test_session_files_are_private(tmp_path):
    path = str(tmp_path / "new" / "s.jsonl")
    writer = FileSessionStorage().open_writer(path)
    writer.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def _temp_files(storage, folder):
    names = [os.path.basename(p) for p in storage.files] if hasattr(storage, "files") else []
    names += os.listdir(folder) if os.path.isdir(folder) else []
    return [name for name in names if name.endswith(".tmp")]


def test_atomic_write_replaces_the_file(storage, tmp_path):
    path = str(tmp_path / "s.jsonl")
    storage.write_text(path, "old\n")
    write_atomically(storage, path, (b"%d\n" % n for n in range(100_000)))
    assert storage.read_text(path).splitlines()[-1] == "99999"
    assert _temp_files(storage, tmp_path) == []


def test_failed_atomic_write_keeps_the_old_file_and_removes_the_temp(storage, tmp_path):
    path = str(tmp_path / "s.jsonl")
    storage.write_text(path, "old\n")

    def lines():
        yield b"new\n"
        raise RuntimeError("serialisation failed")

    with pytest.raises(RuntimeError):
        write_atomically(storage, path, lines())
    assert storage.read_text(path) == "old\n"
    assert _temp_files(storage, tmp_path) == []


def test_atomic_write_uses_a_dot_temp_name_in_the_same_folder(tmp_path):
    storage = MemorySessionStorage()
    path = str(tmp_path / "s.jsonl")
    seen: list[str] = []
    original = storage.rename

    def spy(source: str, target: str) -> None:
        seen.append(source)
        original(source, target)

    storage.rename = spy  # type: ignore[method-assign]
    write_atomically(storage, path, [b"x\n"])
    (temp,) = seen
    assert os.path.dirname(temp) == str(tmp_path)
    name = os.path.basename(temp)
    assert name.startswith(".s.jsonl.") and name.endswith(".tmp")
    assert len(name) == len(".s.jsonl.") + 16 + len(".tmp")


def test_a_writer_whose_file_cannot_be_made_leaves_nothing_to_raise_later(tmp_path, monkeypatch):
    """The constructor's error is the only one: collecting the half-made writer raises nothing
    (its __del__ had raised AttributeError: no attribute '_fd')."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for path in (blocker / "sessions" / "x.jsonl", tmp_path):  # a file as folder; a folder
        with pytest.raises(OSError):
            FileSessionStorageWriter(str(path))
        gc.collect()
    assert [hook.exc_value for hook in unraisable] == []
