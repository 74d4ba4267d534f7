"""``usage`` beside ccusage 20.0.24 for Gemini CLI (JSONL and its older JSON documents), Qwen
Code, GitHub Copilot CLI, Factory Droid and opencode (its storage tree): the fixtures of
tests/fixtures laid out as a home (tests/agent_homes.py), tokens and cost per session side by
side. docs/ccusage.md explains every difference.

ccusage is installed from npm into a cache folder outside the repository (compare_ccusage.py)
and run --offline with HOME pointing into a temp home; xcsh-store syncs that home into a temp
agent dir. Cursor is not in ccusage 20.0.24.

    python benchmarks/compare_ccusage_jsonl.py [--cache ~/.cache/xcsh-store-bench/ccusage]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from agent_homes import lay_out_agents, lay_out_documents
from isolation import isolated_environment

from benchmarks.compare_ccusage import install_ccusage

AGENTS = ("gemini", "qwen", "copilot", "droid", "opencode")
# The agents of tests/agent_homes.py HOME_PLACES (JSONL files).
JSONL_AGENTS = AGENTS[:4]
# (input, output, cache read, cache write, cost)
Figures = list[Any]


def ccusage_rows(binary: Path, environment: dict[str, str]) -> dict[tuple[str, str], Figures]:
    rows = {}
    for agent in AGENTS:
        report = subprocess.run(
            [str(binary), agent, "session", "--offline", "--json"],
            env=environment, capture_output=True, text=True, check=True,
        )  # fmt: skip
        for session in json.loads(report.stdout)["sessions"]:
            rows[(agent, session["sessionId"])] = [
                session["inputTokens"], session["outputTokens"], session["cacheReadTokens"],
                session["cacheCreationTokens"], session["totalCost"],
            ]  # fmt: skip
    return rows


def xcsh_rows(environment: dict[str, str], agent_dir: Path) -> dict[tuple[str, str], Figures]:
    command = [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir)]
    subprocess.run([*command, "sync", "--init"], env=environment, check=True, capture_output=True)
    rows = {}
    for agent in AGENTS:
        report = subprocess.run(
            [*command, "usage", "--by", "session", "--agent", agent, "--json"],
            env=environment, capture_output=True, text=True, check=True,
        )  # fmt: skip
        for row in json.loads(report.stdout)["rows"]:
            rows[(agent, row["key"])] = [
                row["input_tokens"], row["output_tokens"], row["cache_read_tokens"],
                row["cache_write_tokens"], row["cost"],
            ]  # fmt: skip
    return rows


def _shown(figures: Figures | None) -> str:
    if figures is None:
        return "(not listed)"
    *tokens, cost = figures
    money = "no price" if cost is None else f"${cost:.6f}"
    return ", ".join(f"{count:,}" for count in tokens) + f"; {money}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "xcsh-store-bench" / "ccusage"
    )
    options = parser.parse_args()
    binary = install_ccusage(options.cache)
    with tempfile.TemporaryDirectory() as temp:
        home = Path(temp) / "home"
        lay_out_agents(home, JSONL_AGENTS)
        lay_out_documents(home)
        environment = {**isolated_environment(home), "PATH": os.environ["PATH"]}
        ccusage = ccusage_rows(binary, environment)
        ours = xcsh_rows(environment, Path(temp) / "agent")
    print(
        "| agent | session | xcsh-store (input, output, cache read, cache write; cost) | ccusage |"
    )
    print("|---|---|---|---|")
    for agent, session in sorted(set(ccusage) | set(ours)):
        key = (agent, session)
        print(f"| {agent} | {session} | {_shown(ours.get(key))} | {_shown(ccusage.get(key))} |")


if __name__ == "__main__":
    main()
