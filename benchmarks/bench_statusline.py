"""``xcsh-store statusline`` as Claude Code runs it: its statusLine JSON through a pipe after
one line was appended to the session's transcript, on a Claude Code tree of the real fixtures
(claude_tree.py, 326 MB by default) indexed once; wall times over N runs, as ratios to
baselines measured in the same run: ``python -c pass`` (the interpreter alone), ``xcsh-store
--version`` (the click program) and, with ``--ccusage``, ``ccusage statusline --offline`` (20.0.24,
installed from npm into a cache folder) on the same input. Also checks that the line's session
cost is ``usage --by session``'s.

    python -m benchmarks.bench_statusline [--size 326MB] [--runs 50] [--ccusage] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.claude_tree import claude_home, tree_bytes
from benchmarks.compare_ccusage import install_ccusage
from benchmarks.harness import percentile

PROGRAM = str(Path(sys.executable).with_name("xcsh-store"))


def timed(argv: list[str], given: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    """Wall seconds of one run with ``given`` on stdin (a file: no pipe-feeding thread), and
    its stdout."""
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout:
        stdin.write(given)
        stdin.seek(0)
        started = time.perf_counter()
        code = subprocess.Popen(argv, stdin=stdin, stdout=stdout, env=env).wait()
        elapsed = time.perf_counter() - started
        stdout.seek(0)
        output = stdout.read()
    if code != 0:
        raise SystemExit(f"{argv[0]} exited {code}")
    return elapsed, output


def appended(transcript: Path, line: bytes, number: int) -> None:
    """One more assistant line, as Claude Code appends one (new ids: a new response)."""
    value = json.loads(line)
    value["uuid"] = f"00000000-0000-4000-8000-{number:012d}"
    value["message"]["id"] = f"msg_bench{number}"
    value["requestId"] = f"req_bench{number}"
    with transcript.open("ab") as stream:
        stream.write(json.dumps(value).encode() + b"\n")


def summary(name: str, seconds: list[float]) -> dict[str, float | str]:
    return {
        "name": name,
        "p50_ms": percentile(seconds, 50) * 1000,
        "p95_ms": percentile(seconds, 95) * 1000,
        "runs": len(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="326MB")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--ccusage", action="store_true")
    parser.add_argument("--ccusage-runs", type=int, default=10)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/xcsh-store-bench")
    parser.add_argument("--quick", action="store_true", help="20MB, 10 runs")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.size, arguments.runs = "20MB", 10
    source = claude_home(arguments.size)
    work = Path(tempfile.mkdtemp(prefix="bench-statusline-"))
    try:
        home = work / "home"
        shutil.copytree(source, home)
        env = os.environ | {
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "XDG_CONFIG_HOME": str(work / "config"),
            "XDG_DATA_HOME": str(work / "data"),
            "XCSH_AGENT_DIR": str(work / "agent"),
        }
        env.pop("NO_COLOR", None)
        started = time.perf_counter()
        subprocess.run([PROGRAM, "sync", "--init"], env=env, check=True, capture_output=True)
        synced = time.perf_counter() - started
        transcript = max(home.glob(".claude/projects/*/*.jsonl"), key=lambda p: p.stat().st_size)
        assistant = next(
            line
            for line in transcript.read_bytes().splitlines()
            if b'"type":"assistant"' in line.replace(b" ", b"") and b'"usage"' in line
        )
        session = transcript.stem
        given = json.dumps(
            {
                "session_id": session,
                "transcript_path": str(transcript),
                "cwd": "/work/project",
                "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
                "workspace": {"current_dir": "/work/project", "project_dir": "/work/project"},
                "cost": {"total_cost_usd": 1.0},
                "version": "2.1.0",
            }
        ).encode()
        load = os.getloadavg()
        runs: dict[str, list[float]] = {"python": [], "version": [], "statusline": []}
        line = b""
        for number in range(arguments.runs):
            appended(transcript, assistant, number)
            runs["python"].append(timed([sys.executable, "-c", "pass"], b"", env)[0])
            runs["version"].append(timed([PROGRAM, "--version"], b"", env)[0])
            seconds, line = timed([PROGRAM, "statusline"], given, env)
            runs["statusline"].append(seconds)
        if arguments.ccusage:
            binary = install_ccusage(arguments.cache / "ccusage")
            runs["ccusage"] = []
            for number in range(arguments.ccusage_runs):
                appended(transcript, assistant, arguments.runs + number)
                runs["ccusage"].append(
                    timed([str(binary), "statusline", "--offline"], given, env)[0]
                )
        # The session's cost as `usage --by session` says it, after a sync (the line read an
        # index a sync behind the appended lines: its "…" says so).
        subprocess.run([PROGRAM, "sync"], env=env, check=True, capture_output=True)
        _seconds, fresh = timed([PROGRAM, "statusline"], given, env)
        report = subprocess.run(
            [PROGRAM, "usage", "--by", "session", "--json"], env=env, check=True,
            capture_output=True,
        )  # fmt: skip
        rows = {row["key"]: row for row in json.loads(report.stdout)["rows"]}
        expected = f"session ${rows[session]['cost']:,.2f} ·"
        results = [summary(name, seconds) for name, seconds in runs.items()]
        status_p95 = percentile(runs["statusline"], 95)
        print(f"tree: {tree_bytes(source) / 1e6:.0f} MB, synced in {synced:.1f} s;"
              f" load average at the start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")  # fmt: skip
        print(f"{'command':<12} {'p50 ms':>8} {'p95 ms':>8} {'runs':>5} {'p95 / statusline':>17}")
        for result in results:
            ratio = percentile(runs[str(result["name"])], 95) / status_p95
            print(f"{result['name']:<12} {result['p50_ms']:8.1f} {result['p95_ms']:8.1f}"
                  f" {result['runs']:5d} {ratio:17.2f}")  # fmt: skip
        print(f"line (one behind): {line.decode().strip()}")
        print(f"line (after sync): {fresh.decode().strip()}")
        print(f"session cost equals usage --by session's: {expected in fresh.decode()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
