"""A Claude Code home of a given size made from the real fixture files: each fixture copied again
and again into ``<home>/.claude/projects/<project>/<session id>.jsonl``, every copy a session of
its own (its UUIDs, message ids and request ids replaced by ones of the copy, so that neither
ccusage nor xcsh-store takes two copies for one response), its bytes otherwise those of the
real file. Cached under ``$XCSH_BENCH_DATA`` (default ``benchmarks/.data``) and reused.

    python benchmarks/claude_tree.py --size 326MB
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import DATA_DIR, parse_size

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude"
# Bump when the bytes written change, so that an older cached tree is built again.
TREE_VERSION = 2
_IDS = re.compile(
    rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?:msg|req)_[0-9A-Za-z]+"
)


def _renamed(data: bytes, copy: int) -> tuple[bytes, str]:
    """The file's bytes with every id replaced by one of this copy; the copy's session id."""
    mapping: dict[bytes, bytes] = {}

    def replace(match: re.Match[bytes]) -> bytes:
        found = match.group(0)
        new = mapping.get(found)
        if new is None:
            if found[:4] in (b"msg_", b"req_"):
                new = found + b"c%d" % copy
            else:
                new = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{copy}:{found.decode()}")).encode()
            mapping[found] = new
        return new

    renamed = _IDS.sub(replace, data)
    return renamed, str(uuid.uuid5(uuid.NAMESPACE_OID, f"session:{copy}"))


# An ISO time of a Codex line (``2025-11-17T21:30:28.123Z``): its second, and what follows it.
_TIME = re.compile(rb"(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)")


def _shifted(data: bytes, copy: int) -> bytes:
    """The file's bytes with every time ``copy`` seconds later (whole seconds: what falls in
    one second still does, as Codex's fork replay is told by its second)."""

    def shift(match: re.Match[bytes]) -> bytes:
        moved = datetime.fromisoformat(match.group(1).decode()) + timedelta(seconds=copy)
        return moved.isoformat().encode() + (match.group(2) or b"") + match.group(3)

    return _TIME.sub(shift, data)


def claude_home(size: str) -> Path:
    """A home folder whose ``.claude/projects`` holds about ``size`` bytes of sessions."""
    return _home_of_copies(
        "claude", size, FIXTURES,
        lambda home, copy, session_id: home / ".claude" / "projects"
        / f"-work-project-{copy % 40}" / f"{session_id}.jsonl",
    )  # fmt: skip


CODEX_FIXTURES = FIXTURES.parent / "codex"


def codex_home(size: str) -> Path:
    """A home folder whose ``.codex/sessions`` holds about ``size`` bytes of Codex rollouts made
    from the Codex fixtures, as :func:`claude_home` makes Claude Code's (every UUID of a copy
    its own: each copy a session), every time of a copy moved by its number of seconds (ccusage
    takes token_count events of the same time and running totals for one, whatever their
    session: copies that kept the fixtures' times were counted once)."""
    return _home_of_copies(
        "codex", size, CODEX_FIXTURES,
        lambda home, copy, session_id: home / ".codex" / "sessions" / "2025" / "11"
        / f"{copy % 28 + 1:02d}" / f"rollout-2025-11-01T00-00-00-{session_id}.jsonl",
        _shifted,
    )  # fmt: skip


def _home_of_copies(
    agent: str, size: str, fixtures: Path, place: Callable[[Path, int, str], Path],
    moved: Callable[[bytes, int], bytes] | None = None,
) -> Path:  # fmt: skip
    """A home of renamed copies of ``fixtures``' files, about ``size`` bytes, each written where
    ``place(home, copy, session_id)`` says (its bytes ``moved(data, copy)`` too, when given);
    made once, then reused."""
    base = Path(os.environ.get("XCSH_BENCH_DATA", DATA_DIR))
    home = base / f"{agent}-home-{size.lower()}-v{TREE_VERSION}"
    done = home / ".complete"
    if done.exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    target = parse_size(size)
    sources = sorted(path.read_bytes() for path in fixtures.glob("*.jsonl"))
    written = 0
    copy = 0
    while written < target:
        for data in sources:
            renamed, session_id = _renamed(data, copy)
            if moved is not None:
                renamed = moved(renamed, copy)
            path = place(home, copy, session_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(renamed)
            written += len(renamed)
            copy += 1
            if written >= target:
                break
    done.write_text(f"{written}\n")
    return home


def tree_bytes(home: Path) -> int:
    return int((home / ".complete").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="326MB")
    home = claude_home(parser.parse_args().size)
    print(home, tree_bytes(home))


if __name__ == "__main__":
    main()
