"""What the command line leaves on disk: read verbs create nothing (no index.db, history.db,
-wal/-shm), a mistyped agent dir is refused, written files are private, nothing is skipped
silently."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from manager_helpers import assistant

from xcsh_store import HistoryStorage, SessionManager
from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex


def invoke(agent: Path, *args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, ["--agent-dir", str(agent), *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def files_below(folder: Path) -> dict[str, tuple[int, int] | None]:
    """Every file and folder below ``folder`` by relative path: (size, mtime_ns) of a file.

    Folders count by name only: SQLite may create and delete side files while it reads.
    """
    found: dict[str, tuple[int, int] | None] = {}
    for path in [folder, *folder.rglob("*")]:
        info = path.lstat()
        is_folder = stat.S_ISDIR(info.st_mode)
        found[str(path.relative_to(folder))] = (
            None if is_folder else (info.st_size, info.st_mtime_ns)
        )
    return found


@pytest.fixture
def used_agent_dir(agent_dir: Path) -> dict[str, str]:
    """An agent dir with a session (image blob, artifact), prompt history and an index, as
    the store leaves them: no -wal/-shm files once every writer has closed."""
    image = base64.b64encode(os.urandom(512)).decode()
    with SessionManager.create("/work/app") as manager:
        manager.append_message(
            {"role": "user", "content": [{"type": "text", "text": "hello world"},
                                         {"type": "image", "data": image, "mimeType": "image/png"}]}
        )  # fmt: skip
        manager.append_message(assistant("hello back"))
        artifact = manager.save_artifact("tool output\n", "bash")
        session_id = manager.get_session_id()
    with HistoryStorage.open() as history:
        history.add("hello prompt")
    invoke(agent_dir, "sync")
    return {"session": session_id, "artifact": f"artifact://{artifact}"}


READ_VERBS = (
    ("ls",),
    ("ls", "--json"),
    ("show", "{session}"),
    ("show", "{session}", "--tree"),
    ("show", "{session}", "--context", "--json"),
    ("search", "hello"),
    ("usage",),
    ("usage", "--json"),
    ("sql", "SELECT count(*) FROM sessions"),
    ("cat", "{artifact}", "--session", "{session}"),
    ("history", "recent"),
    ("history", "search", "hello"),
    ("history", "recent", "--sessions"),
    ("verify",),
    ("doctor",),
    ("gc",),
)


@pytest.mark.parametrize("verb", READ_VERBS, ids=" ".join)
def test_read_verbs_create_no_file(agent_dir, used_agent_dir, verb):
    before = files_below(agent_dir)
    assert not [name for name in before if name.endswith(("-wal", "-shm"))]
    invoke(agent_dir, *(part.format(**used_agent_dir) for part in verb))
    after = files_below(agent_dir)
    if verb == ("gc",):
        # gc syncs first (documented), which writes index.db; it creates nothing.
        assert sorted(after) == sorted(before)
    else:
        assert after == before


def test_a_reader_leaves_the_side_files_of_a_writer_that_is_still_open(used_agent_dir, agent_dir):
    with SessionIndex.open(str(agent_dir)) as writer:
        writer.add_root(str(agent_dir / "elsewhere"))  # a write: the log now holds it
        with SessionIndex.open(str(agent_dir), read_only=True) as reader:
            assert reader.roots()[1:] == [str(agent_dir / "elsewhere")]
        assert (agent_dir / "index.db-wal").exists() and (agent_dir / "index.db-shm").exists()
        writer.remove_root(str(agent_dir / "elsewhere"))
    assert not (agent_dir / "index.db-wal").exists()
    with SessionIndex.open(str(agent_dir), read_only=True) as reader:
        assert reader.roots()[1:] == []
