"""How often a sync's call chain comes back to a module it had left (issue 40, item 5).

Runs real syncs of the test fixtures (tests/fixtures: Claude Code, Codex, pi) in a temp home,
in this process (``workers=1``, so that every call is seen): a first full sync, a sync after one
appended line (a resumed read), and a usage-first sync (``entries=False``) followed by the sync
that reads those files whole and adds their search text. A profile hook sees every call into a
module of ``xcsh_store.index``; a call *returns to a module already left* when its module has a
frame further down the stack, under a frame of another index module: the chain went from that
module into others and comes back to it (a callback, or a stage that calls an earlier stage).

Prints, per sync and in all: the index modules the sync walks, the distinct chains that come
back (module path, callee), and how many calls do. Usage::

    .venv/bin/python benchmarks/write_path_trace.py
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from isolation import isolate
from real_home import lay_out_home

PACKAGE = "xcsh_store.index"
# The modules of the flat walk: the write path and the connection's own (index/db.py).
WALKED = ("xcsh_store.index.write", "xcsh_store.index.db")


def _module(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    name = frame.f_globals.get("__name__", "")
    return name if name == PACKAGE or name.startswith(PACKAGE + ".") else None


def _innermost(frame: FrameType | None) -> str | None:
    """The module of the innermost frame of the write path (``WALKED``) from ``frame`` down."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith(WALKED):
            return name
        frame = frame.f_back
    return None


class Trace:
    """The index modules a run walks, and the calls that come back to one already left."""

    def __init__(self) -> None:
        self.walked: list[str] = []
        self.returns: collections.Counter[tuple[tuple[str, ...], str]] = collections.Counter()
        # The walk of the write path: each move from one of its modules to another (by a call
        # or a return), counted once; and the moves that come back to a module already left.
        self.current: str | None = None
        self.moves: dict[tuple[str, str], None] = {}
        self.back: dict[tuple[str, str], None] = {}
        self.left: set[str] = set()
        # Which module of the write path calls which (caller, callee), by the calls alone.
        self.calls: set[tuple[str, str]] = set()

    def _move(self, to: str | None) -> None:
        if to is None or to == self.current:
            return
        if self.current is not None:
            move = (self.current, to)
            self.moves.setdefault(move, None)
            self.left.add(self.current)
            if to in self.left:
                self.back.setdefault(move, None)
        self.current = to

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "return":
            self._move(_innermost(frame.f_back))
            return
        if event != "call":
            return
        self._move(_innermost(frame))
        caller, called = _innermost(frame.f_back), _innermost(frame)
        if caller is not None and called is not None and caller != called:
            self.calls.add((caller, called))
        callee = _module(frame)
        if callee is None:
            return
        if callee not in self.walked:
            self.walked.append(callee)
        path: list[str] = []  # the index modules below, innermost first, runs collapsed
        below = frame.f_back
        while below is not None:
            module = _module(below)
            if module is not None and (not path or path[-1] != module):
                path.append(module)
            below = below.f_back
        if path and path[0] != callee and callee in path[1:]:
            chain = tuple(reversed(path))
            self.returns[(chain, callee)] += 1


def _short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".")


def _mutual(calls: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs of modules each of which calls the other (back and forth)."""
    return sorted((one, other) for one, other in calls if one < other and (other, one) in calls)


def traced(name: str, run: Any, totals: Trace) -> None:
    trace = Trace()
    sys.setprofile(trace)
    try:
        run()
    finally:
        sys.setprofile(None)
    print(f"## {name}: {len(trace.walked)} index modules walked")
    print("   " + " ".join(_short(module) for module in trace.walked))
    print(
        f"   returns to a module already left: {len(trace.returns)} distinct,"
        f" {sum(trace.returns.values())} calls"
    )
    for (chain, callee), count in sorted(trace.returns.items()):
        print(f"     {' > '.join(map(_short, chain))} > {_short(callee)}  ({count})")
        totals.returns[(chain, callee)] += count
    print(
        f"   walk of the write path: {len(trace.moves)} distinct moves between its modules,"
        f" {len(trace.back)} of them back to a module already left"
    )
    for source, to in trace.back:
        print(f"     {_short(source)} -> {_short(to)}")
    mutual = _mutual(trace.calls)
    print(f"   modules of the write path that call each other: {len(mutual)} pairs")
    for one, other in mutual:
        print(f"     {_short(one)} <-> {_short(other)}")
    totals.calls.update(trace.calls)
    totals.moves.update(trace.moves)
    totals.back.update(trace.back)
    for module in trace.walked:
        if module not in totals.walked:
            totals.walked.append(module)


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="write-path-trace-"))
    isolate(base / "home", os.environ)
    os.environ["XCSH_AGENT_DIR"] = str(base / "home" / ".xcsh" / "agent")
    home = lay_out_home(base / "home")

    from xcsh_store.index import SessionIndex
    from xcsh_store.index.write import sync as sync_module

    totals = Trace()
    with SessionIndex.open(str(base / "full")) as index:
        traced("first sync, full pass", lambda: index.sync(workers=1), totals)
        appended = next(path for name, path in sorted(home.files.items()) if "claude" in name)
        with appended.open("rb") as stream:
            last = stream.read().splitlines()[-1]
        with appended.open("ab") as stream:
            stream.write(last + b"\n")
        traced("sync after an appended line", lambda: index.sync(workers=1), totals)
    sync_module.TEXT_LATER_MIN_BYTES = 0  # (the lean pass at any size: the fixtures are small)
    with SessionIndex.open(str(base / "lean")) as index:
        traced("usage-first sync", lambda: index.sync(workers=1, entries=False), totals)
        traced("the sync after it (entries, text)", lambda: index.sync(workers=1), totals)
    print(
        f"## all four: {len(totals.walked)} index modules walked; returns to a module already"
        f" left: {len(totals.returns)} distinct chains, {sum(totals.returns.values())} calls;"
        f" write-path walk: {len(totals.moves)} distinct moves, {len(totals.back)} back;"
        f" modules that call each other: {len(_mutual(totals.calls))} pairs"
    )
    for one, other in _mutual(totals.calls):
        print(f"     {_short(one)} <-> {_short(other)}")


if __name__ == "__main__":
    main()
