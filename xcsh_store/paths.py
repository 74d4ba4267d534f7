"""Where things live: agent dir, cwd encoding, file names, ids, terminal breadcrumbs."""

from __future__ import annotations

import itertools
import logging
import os
import random
import stat
import threading
import time
from collections.abc import Container

from xcsh_store.files import open_regular_file

log = logging.getLogger("xcsh_store")

AGENT_DIR_ENV = "XCSH_AGENT_DIR"
TERMINAL_ID_ENV = "XCSH_TERMINAL_ID"
SESSIONS_DIRNAME = "sessions"
BLOBS_DIRNAME = "blobs"
TERMINAL_SESSIONS_DIRNAME = "terminal-sessions"
HISTORY_DB_NAME = "history.db"
INDEX_DB_NAME = "index.db"
# Other agents' sessions as the store read them, beside index.db (index/archive/).
ARCHIVE_DIRNAME = "archive"

DIR_MODE = 0o700
FILE_MODE = 0o600

# Snowflake ids: milliseconds since 2015-01-01 shifted over a 22-bit sequence (compatibility: Ids
# and paths as in the reference).
_SNOWFLAKE_EPOCH_MS = 1_420_070_400_000
_SEQUENCE_MASK = 0x3FFFFF
_sequence = itertools.count((int.from_bytes(os.urandom(3), "big") >> 2) + 1)
_sequence_lock = threading.Lock()

ENTRY_ID_ATTEMPTS = 100


def get_agent_dir() -> str:
    """``$XCSH_AGENT_DIR`` (made absolute) or ``~/.xcsh/agent``."""
    override = os.environ.get(AGENT_DIR_ENV)
    if override:
        return os.path.abspath(os.path.expanduser(override))
    return os.path.join(os.path.expanduser("~"), ".xcsh", "agent")


def _under_agent_dir(name: str, agent_dir: str | None) -> str:
    return os.path.join(agent_dir if agent_dir is not None else get_agent_dir(), name)


def get_sessions_dir(agent_dir: str | None = None) -> str:
    return _under_agent_dir(SESSIONS_DIRNAME, agent_dir)


def get_blobs_dir(agent_dir: str | None = None) -> str:
    return _under_agent_dir(BLOBS_DIRNAME, agent_dir)


def get_terminal_sessions_dir(agent_dir: str | None = None) -> str:
    return _under_agent_dir(TERMINAL_SESSIONS_DIRNAME, agent_dir)


def get_history_db_path(agent_dir: str | None = None) -> str:
    return _under_agent_dir(HISTORY_DB_NAME, agent_dir)


def get_index_db_path(agent_dir: str | None = None) -> str:
    return _under_agent_dir(INDEX_DB_NAME, agent_dir)


def get_archive_dir(agent_dir: str | None = None) -> str:
    return _under_agent_dir(ARCHIVE_DIRNAME, agent_dir)


def agent_dir_of(session_dir: str | None) -> str:
    """The agent dir a session folder belongs to: ``X`` for ``X/sessions/<project>[/...]``.

    Session folders elsewhere (custom locations) belong to the default agent dir. This keeps a
    session's blobs and breadcrumbs with the agent dir its files live in.
    """
    if session_dir:
        parts = os.path.abspath(session_dir).split(os.sep)
        for position in range(len(parts) - 2, 0, -1):
            if parts[position] == SESSIONS_DIRNAME:
                return os.sep.join(parts[:position]) or os.sep
    return get_agent_dir()


def is_agent_dir(agent_dir: str) -> bool:
    """Whether an agent has been at work here: a ``sessions/`` folder or a ``history.db``.

    A mistyped ``--agent-dir`` is neither, and nothing should be created there by accident.
    """
    return os.path.isdir(get_sessions_dir(agent_dir)) or os.path.isfile(
        get_history_db_path(agent_dir)
    )


def ensure_private_dir(path: str) -> None:
    """Create ``path`` and its parents; folders we create are readable by the owner only.

    ``os.makedirs`` applies its mode to the last folder only (parents get 0777 minus the
    umask), so each missing folder is made here. Existing folders are left as they are.
    """
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def write_private_file(path: str, data: bytes) -> None:
    """Write ``path`` (a file the user named) readable by its owner only, as everything the
    store writes: a new file is made 0600, an existing regular file is made so too."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
    with open(descriptor, "wb") as handle:
        # Never a terminal or a pipe (`--html /dev/stdout`): their modes are not ours to change.
        if stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.fchmod(descriptor, FILE_MODE)
        handle.write(data)


def encode_cwd(cwd: str) -> str:
    """The session folder name of a working directory: ``/work/pi`` -> ``--work-pi--``.

    Computed from the absolute, normalised path; symlinks are deliberately not resolved so the
    name only depends on the string the agent was started with (compatibility: Session folder
    names).
    """
    resolved = os.path.abspath(cwd)
    if resolved[:1] in ("/", "\\"):
        resolved = resolved[1:]
    return "--" + resolved.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def get_default_session_dir(cwd: str, agent_dir: str | None = None) -> str:
    """``<agent>/sessions/<encode_cwd(cwd)>``, created if missing."""
    session_dir = os.path.join(get_sessions_dir(agent_dir), encode_cwd(cwd))
    ensure_private_dir(session_dir)
    return session_dir


def file_timestamp(iso: str) -> str:
    """The ISO timestamp as it appears in a session file name (``:`` and ``.`` become ``-``)."""
    return iso.replace(":", "-").replace(".", "-")


def session_file_name(iso: str, session_id: str) -> str:
    return f"{file_timestamp(iso)}_{session_id}.jsonl"


def new_session_id() -> str:
    """A 16-hex Snowflake, unique within the process and ordered by creation time."""
    with _sequence_lock:
        sequence = next(_sequence) & _SEQUENCE_MASK
    value = ((int(time.time() * 1000) - _SNOWFLAKE_EPOCH_MS) << 22) | sequence
    return f"{value:016x}"


def new_entry_id(existing: Container[str] = ()) -> str:
    """Eight random hex digits not in ``existing``; a Snowflake after 100 collisions."""
    for _ in range(ENTRY_ID_ATTEMPTS):
        # Ids only need to be unique within their session (checked here), not unguessable; the
        # module-level generator is cheap and is reseeded in a forked child.
        candidate = f"{random.getrandbits(32):08x}"
        if candidate not in existing:
            return candidate
    return new_session_id()


def get_terminal_id() -> str | None:
    """The id of the terminal this process runs in, or None when there is none (compatibility:
    Terminal id pinned by XCSH_TERMINAL_ID)."""
    pinned = os.environ.get(TERMINAL_ID_ENV)
    if pinned:
        return _safe_file_name(pinned)
    try:
        if os.isatty(0):
            tty = os.ttyname(0)
            if tty.startswith("/dev/"):
                return _safe_file_name(tty[len("/dev/") :])
    except OSError:
        pass
    for variable, prefix in (
        ("KITTY_WINDOW_ID", "kitty-"),
        ("TMUX_PANE", "tmux-"),
        ("TERM_SESSION_ID", "apple-"),
        ("WT_SESSION", "wt-"),
    ):
        value = os.environ.get(variable)
        if value:
            return _safe_file_name(prefix + value)
    return None


def _safe_file_name(name: str) -> str | None:
    """Terminal ids become file names: no separators, no NUL, never ``.`` or ``..``."""
    cleaned = name.replace("/", "-").replace("\\", "-").replace("\0", "")
    if cleaned in ("", ".", ".."):
        return None
    return cleaned


def _breadcrumb_path(agent_dir: str | None) -> str | None:
    terminal_id = get_terminal_id()
    if terminal_id is None:
        return None
    return os.path.join(get_terminal_sessions_dir(agent_dir), terminal_id)


def write_terminal_breadcrumb(cwd: str, session_file: str, agent_dir: str | None = None) -> None:
    """Remember the session file used in this terminal; failures are logged, never raised."""
    path = _breadcrumb_path(agent_dir)
    if path is None:
        return
    try:
        ensure_private_dir(os.path.dirname(path))
        temp = f"{path}.{os.getpid()}.tmp"
        # A cwd from a session header may hold lone surrogates (a JSON \ud800 escape).
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with open(descriptor, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(f"{cwd}\n{session_file}\n")
        os.replace(temp, path)
    except OSError as error:
        log.debug("could not write terminal breadcrumb %s: %s", path, error)


def read_terminal_breadcrumb(cwd: str, agent_dir: str | None = None) -> str | None:
    """The session file this terminal last used in ``cwd``, if it still exists."""
    path = _breadcrumb_path(agent_dir)
    if path is None:
        return None
    try:
        with open_regular_file(path) as handle:
            lines = handle.read().decode("utf-8", "replace").strip().split("\n")
    except FileNotFoundError:
        return None
    except OSError as error:
        log.debug("could not read terminal breadcrumb %s: %s", path, error)
        return None
    if len(lines) < 2 or os.path.abspath(lines[0]) != os.path.abspath(cwd):
        return None
    session_file = lines[1]
    return session_file if os.path.isfile(session_file) else None


def artifacts_dir_for(session_file: str) -> str:
    """The per-session artifact folder: the session file path without ``.jsonl``."""
    return session_file[:-6]
