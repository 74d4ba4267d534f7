"""Per-session artifact files: tool-output ids, subagent output ids, temp and forked folders."""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Callable, Iterable

from xcsh_store.artifacts.output import utf8_encode
from xcsh_store.paths import FILE_MODE, artifacts_dir_for, ensure_private_dir, new_session_id

log = logging.getLogger("xcsh_store")

# `<n>.<toolType>.log`; DOTALL and an ASCII digit class so that every name xcsh could have
# numbered counts when we continue the sequence (counting too much only skips ids).
_ARTIFACT_NAME = re.compile(r"([0-9]+)\..*\.log", re.DOTALL)

TEMP_ARTIFACTS_PREFIX = "xcsh-task-"


def _check_name_part(value: str, what: str) -> None:
    """Ids and tool types become file names: they must not name another folder."""
    if not value or "/" in value or "\\" in value or "\0" in value or value in (".", ".."):
        raise ValueError(f"invalid {what} for an artifact file name: {value!r}")


def _write_text_exclusive(path: str, content: str | bytes) -> None:
    """Create ``path`` (never an existing file) and write ``content`` as UTF-8."""
    data = content if isinstance(content, bytes) else utf8_encode(content)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


class ArtifactManager:
    """Numbers the tool-output files ``<n>.<toolType>.log`` of one session.

    ``dir`` is the session file path without ``.jsonl``. The first allocation scans the folder
    once and continues after the highest existing number, so a restarted session (or a second
    manager on the same folder) never reuses an id. Ids are strings (``"0"``, ``"1"``, ...),
    the form every other artifact API takes and returns.
    """

    def __init__(self, session_file: str) -> None:
        self.dir = artifacts_dir_for(session_file)
        self._next_id: int | None = None

    def _scan_once(self) -> int:
        if self._next_id is None:
            highest = -1
            for name in self.list_files():
                match = _ARTIFACT_NAME.fullmatch(name)
                if match:
                    highest = max(highest, int(match.group(1)))
            self._next_id = highest + 1
        return self._next_id

    def _claim_id(self) -> str:
        """The next id that no file in the folder uses yet (another manager may have written)."""
        next_id = self._scan_once()
        taken = {name.split(".", 1)[0] for name in self.list_files() if "." in name}
        while str(next_id) in taken:
            next_id += 1
        self._next_id = next_id + 1
        return str(next_id)

    def allocate_id(self) -> str:
        """Reserve the next id without creating the folder or any file."""
        return self._claim_id()

    def allocate_path(self, tool_type: str) -> tuple[str, str]:
        """Reserve an id and return ``(id, "<dir>/<id>.<tool_type>.log")``; nothing is written."""
        _check_name_part(tool_type, "tool type")
        ensure_private_dir(self.dir)
        artifact_id = self._claim_id()
        return artifact_id, os.path.join(self.dir, f"{artifact_id}.{tool_type}.log")

    def save(self, content: str | bytes, tool_type: str) -> str:
        """Write ``content`` to a new artifact file and return its id.

        The file is created exclusively: if the chosen name already exists (another manager got
        there first) the next id is tried, so an artifact is never overwritten.
        """
        while True:
            artifact_id, path = self.allocate_path(tool_type)
            try:
                _write_text_exclusive(path, content)
            except FileExistsError:
                continue
            return artifact_id

    def exists(self, artifact_id: str) -> bool:
        prefix = f"{artifact_id}."
        return any(name.startswith(prefix) for name in self.list_files())

    def list_files(self) -> list[str]:
        """File names in the folder (directory order), or ``[]`` when it cannot be read."""
        try:
            return os.listdir(self.dir)
        except OSError:
            return []

    def get_path(self, artifact_id: str) -> str | None:
        """The first file (directory order) whose name starts with ``<id>.``, or None."""
        prefix = f"{artifact_id}."
        for name in self.list_files():
            if name.startswith(prefix):
                return os.path.join(self.dir, name)
        return None


class AgentOutputManager:
    """Numbers subagent outputs ``<index>-<requestedId>`` (``<prefix>.<index>-<id>`` when nested).

    The folder comes from ``get_artifacts_dir()`` on first use and is scanned once for existing
    ``.md`` outputs; numbering continues after the highest index found. No folder, or one that
    cannot be read, starts at 0.
    """

    def __init__(
        self, get_artifacts_dir: Callable[[], str | None], parent_prefix: str | None = None
    ) -> None:
        self._get_artifacts_dir = get_artifacts_dir
        self._parent_prefix = parent_prefix or None
        self._next_index = 0
        self._initialized = False

    def _ensure_initialized(self) -> None:
        if self._initialized:
            return
        self._initialized = True
        artifacts_dir = self._get_artifacts_dir()
        if not artifacts_dir:
            return
        try:
            names = os.listdir(artifacts_dir)
        except OSError:
            return
        if self._parent_prefix:
            pattern = re.compile(re.escape(self._parent_prefix) + r"\.([0-9]+)-.*\.md", re.DOTALL)
        else:
            pattern = re.compile(r"([0-9]+)-.*\.md", re.DOTALL)
        indices = [int(m.group(1)) for m in map(pattern.fullmatch, names) if m]
        if indices:
            self._next_index = max(indices) + 1

    def allocate(self, requested_id: str) -> str:
        """The output id for one subagent, e.g. ``0-AuthProvider`` or ``0-Auth.1-Subtask``."""
        _check_name_part(requested_id, "agent output id")
        self._ensure_initialized()
        index = self._next_index
        self._next_index += 1
        output_id = f"{index}-{requested_id}"
        return f"{self._parent_prefix}.{output_id}" if self._parent_prefix else output_id

    def allocate_batch(self, requested_ids: Iterable[str]) -> list[str]:
        return [self.allocate(requested_id) for requested_id in requested_ids]

    def peek_next_index(self) -> int:
        self._ensure_initialized()
        return self._next_index

    def reset(self) -> None:
        """Start again at 0; the folder is scanned again on the next use."""
        self._next_index = 0
        self._initialized = False


def node_tmpdir() -> str:
    """Node's ``os.tmpdir()`` on POSIX: $TMPDIR, $TMP, $TEMP or /tmp, one trailing ``/`` cut."""
    path = os.environ.get("TMPDIR") or os.environ.get("TMP") or os.environ.get("TEMP") or "/tmp"
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path


def create_temp_artifacts_dir() -> str:
    """Create ``<tmpdir>/xcsh-task-<16-hex id>`` for a session that has no session file.

    The folder is new and private: an existing name (or a symlink planted in a shared temp dir)
    is never reused, another id is drawn instead.
    """
    base = node_tmpdir()
    while True:
        path = os.path.join(base, TEMP_ARTIFACTS_PREFIX + new_session_id())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path


def copy_artifacts_dir(old_session_file: str, new_session_file: str) -> bool:
    """Copy a session's artifact folder to a forked session's folder (compatibility: Forks copy
    the artifact folder).

    Returns True when the folder was copied or there was nothing to copy; any other failure is
    logged as a warning and returns False, so a fork never fails because of its artifacts.
    Symlinks are copied as symlinks, never followed.
    """
    old_dir = artifacts_dir_for(old_session_file)
    new_dir = artifacts_dir_for(new_session_file)
    if not os.path.isdir(old_dir):
        return True
    try:
        shutil.copytree(old_dir, new_dir, symlinks=True, dirs_exist_ok=True)
    except FileNotFoundError:
        # The source vanished while we looked at it: the same as having nothing to copy.
        return True
    except OSError as error:
        log.warning("Failed to copy artifacts during fork: %s -> %s: %s", old_dir, new_dir, error)
        return False
    return True
