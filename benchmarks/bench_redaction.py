"""Recall and precision of redaction on every surface, on the labelled corpus (issue 39).

    python benchmarks/bench_redaction.py [--pg postgresql://postgres@127.0.0.1:5432/postgres]

The corpus (tests/secrets_corpus.py: 81 made-up secrets of every provider followed by every
punctuation, shell and config forms, private keys whole and cut; the 27 of
tests/planted_secrets.py, made apart from it; 45 ordinary texts of near-misses) is written as
one xcsh session per case: the case in its title, its first message, a tool call's arguments
and two tool outputs that the index cuts at 2,048 characters (one after 1,900 characters of
other output, one alone). Each surface is then asked for all of it, as a user of it would:
``push`` at each tier into a fresh PostgreSQL database, ``export parquet``, a ``serve`` process
answering beyond loopback (each session's page and its tool outputs' entry pages), an ``mcp``
server (``get_entry`` of every entry). A secret counts as kept when no 8-character piece of it
is on the surface; an ordinary case as untouched when no ``[REDACTED:`` is on what the surface
shows of its session. The environment points into a temp dir (no session of this machine is
read).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from isolation import isolate
from secrets_corpus import (
    ORDINARY,
    SECRETS,
    Case,
    Score,
    corpus_sessions,
    exported,
    planted_cases,
    pushed,
    score,
)

from benchmarks.bench_team import fresh_database
from xcsh_store.cli import cli
from xcsh_store.index import SessionIndex
from xcsh_store.secrets import Redactor

TOKEN = "bench-token-0123456789"
ENTRIES = ("u1", "a1", "t1", "t2")


def run(agent_dir: Path, *arguments: str) -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *arguments])
    if result.exit_code != 0:
        raise SystemExit(f"{' '.join(arguments)} failed: {result.output}")


def detector(cases: dict[str, Case]) -> dict[str, str]:
    """What Redactor.text makes of each case alone (the detector, no surface)."""
    redactor = Redactor()
    return {sid: redactor.text(case.text) for sid, case in cases.items()}


def push_at(agent_dir: Path, base: str, tier: str) -> dict[str, str]:
    with fresh_database(base) as url:
        run(agent_dir, "push", url, "--tier", tier)
        return pushed(url)


def parquet(agent_dir: Path, work: Path) -> dict[str, str]:
    out = work / "parquet"
    run(agent_dir, "export", "parquet", str(out), "--tier", "full")
    return exported(out)


def served(agent_dir: Path) -> dict[str, str]:
    """Each session's page and its tool outputs' entry pages, from a ``serve`` process bound
    beyond loopback."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "serve",
         "--host", "0.0.0.0", "--port", str(port), "--token", TOKEN, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def fetch(url: str) -> str:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return html.unescape(response.read().decode("utf-8"))

    try:
        assert process.stdout is not None
        process.stdout.readline()
        end = time.monotonic() + 120
        while True:
            try:
                fetch(base + "/")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > end:
                    raise
                time.sleep(0.2)
        with SessionIndex.open(str(agent_dir), read_only=True) as index:
            paths = {session.id: session.path for session in index.list_sessions()}
        shown = {}
        for sid, path in paths.items():
            query = urllib.parse.urlencode({"path": path})
            urls = [f"{base}/session?{query}"]
            urls += [f"{base}/entry?{query}&id={entry}" for entry in ("t1", "t2")]
            shown[sid] = "\n".join(fetch(url) for url in urls)
        return shown
    finally:
        process.terminate()
        process.wait(timeout=30)


def mcp(agent_dir: Path) -> dict[str, str]:
    """``get_entry`` of every entry of every session, from the MCP server (redacting)."""
    from mcp_client import call_tools

    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        sids = sorted(session.id for session in index.list_sessions())
    calls = [
        ("get_entry", {"session": sid, "entry_id": entry}) for sid in sids for entry in ENTRIES
    ]
    _tools, results = call_tools(agent_dir, calls)
    width = len(ENTRIES)
    return {
        sid: json.dumps(results[number * width : (number + 1) * width])
        for number, sid in enumerate(sids)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    options = parser.parse_args()
    cache = os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    with tempfile.TemporaryDirectory(prefix="bench-redaction-") as temporary:
        work = Path(temporary)
        isolate(work / "home", os.environ)
        os.environ["XDG_CACHE_HOME"] = cache  # the compiled rules' cache only
        agent_dir = work / "agent"
        corpus = SECRETS + planted_cases() + ORDINARY
        cases = corpus_sessions(agent_dir / "sessions" / "--corpus--", corpus)
        with SessionIndex.open(str(agent_dir)) as index:
            index.sync()
        surfaces: list[tuple[str, Callable[[], dict[str, str]]]] = [
            ("detector alone (Redactor.text)", lambda: detector(cases)),
            ("push --tier usage (PostgreSQL)", lambda: push_at(agent_dir, options.pg, "usage")),
            ("push --tier meta (PostgreSQL)", lambda: push_at(agent_dir, options.pg, "meta")),
            ("push --tier full (PostgreSQL)", lambda: push_at(agent_dir, options.pg, "full")),
            ("export parquet --tier full", lambda: parquet(agent_dir, work)),
            ("serve beyond loopback", lambda: served(agent_dir)),
            ("mcp get_entry", lambda: mcp(agent_dir)),
        ]
        rows: list[tuple[str, Score, float]] = []
        for name, shown in surfaces:
            started = time.perf_counter()
            found = score(shown(), cases)
            rows.append((name, found, time.perf_counter() - started))
            print(f"{name}: done", file=sys.stderr)
    secrets = sum(bool(case.needles) for case in cases.values())
    print(f"corpus: {secrets} secrets, {len(cases) - secrets} ordinary texts\n")
    print("| surface | recall (secrets with no 8-character piece shown) | precision "
          "(ordinary texts with nothing redacted) | seconds |")  # fmt: skip
    print("|---|---|---|---|")
    for name, found, seconds in rows:
        print(
            f"| {name} | {found.kept_secrets}/{found.secrets} = {found.recall:.1%} | "
            f"{found.untouched}/{found.ordinary} = {found.precision:.1%} | {seconds:.1f} |"
        )
    for name, found, _seconds in rows:
        if found.leaked or found.flagged:
            print(f"\n{name}: leaked {found.leaked}, flagged {found.flagged}")


if __name__ == "__main__":
    main()
