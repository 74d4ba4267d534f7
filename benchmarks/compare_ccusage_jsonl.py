"""``usage`` beside ccusage 20.0.24 for Gemini CLI (JSONL and its older JSON documents), Qwen
Code, GitHub Copilot CLI, Factory Droid and opencode (its storage tree): the fixtures of
tests/fixtures laid out as a home (tests/agent_homes.py), tokens and cost per session side by
side. docs/ccusage.md explains every difference.

ccusage is installed from npm into a cache folder outside the repository (compare_ccusage.py)
and run --offline with HOME pointing into a temp home; xcsh-store syncs that home into a temp
agent dir. Cursor is not in ccusage 20.0.24. An ``opencode export`` document (which ccusage
does not read) is laid out in the same storage tree as opencode keeps its sessions, so both read
it there: the one of ``--export PATH`` (docs/ccusage.md used w12z/Cap's shared session, fetched
from GitHub: its repository states no licence, so it is not in the repository), else the
document of the same shape tests/helpers/opencode_export.py writes.

    python benchmarks/compare_ccusage_jsonl.py [--cache DIR] [--export opencode-session.json]
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
from helpers.opencode_export import write_reseller_export
from isolation import isolated_environment

from benchmarks.compare_ccusage import install_ccusage

AGENTS = ("gemini", "qwen", "copilot", "droid", "opencode")
# The agents of tests/agent_homes.py HOME_PLACES (JSONL files).
JSONL_AGENTS = AGENTS[:4]
# (input, output, cache read, cache write, cost)
Figures = list[Any]


# An opencode export document: {info: session, messages: [{info: message, parts: [part]}]}.


def lay_out_export(storage: Path, document: Path) -> None:
    """An ``opencode export`` document's session, messages and parts as opencode's storage
    tree keeps them (``session/<project>/<id>.json``, ``message/<session>/<id>.json``,
    ``part/<message>/<id>.json``): the same objects, one file each."""
    shared = json.loads(document.read_text())
    info = shared["info"]
    files = {Path("session", info.get("projectID", "global"), f"{info['id']}.json"): info}
    for message in shared["messages"]:
        files[Path("message", info["id"], f"{message['info']['id']}.json")] = message["info"]
        for part in message["parts"]:
            files[Path("part", message["info"]["id"], f"{part['id']}.json")] = part
    for place, value in files.items():
        (storage / place).parent.mkdir(parents=True, exist_ok=True)
        (storage / place).write_text(json.dumps(value))


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
            cost = row["cost"]
            if row["cost_at_list_price"] is not None:  # a recorded $0 below list price
                cost = (cost, row["cost_at_list_price"])
            rows[(agent, row["key"])] = [
                row["input_tokens"], row["output_tokens"], row["cache_read_tokens"],
                row["cache_write_tokens"], cost,
            ]  # fmt: skip
    return rows


def _shown(figures: Figures | None) -> str:
    if figures is None:
        return "(not listed)"
    *tokens, cost = figures
    if cost is None:
        money = "no price"
    elif isinstance(cost, tuple):
        money = f"${cost[0]:.2f} recorded, ~${cost[1]:.2f} at list price"
    else:
        money = f"${cost:.6f}"
    return ", ".join(f"{count:,}" for count in tokens) + f"; {money}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "xcsh-store-bench" / "ccusage"
    )
    parser.add_argument("--export", type=Path, help="an `opencode export` document to compare")
    options = parser.parse_args()
    binary = install_ccusage(options.cache)
    with tempfile.TemporaryDirectory() as temp:
        home = Path(temp) / "home"
        lay_out_agents(home, JSONL_AGENTS)
        lay_out_documents(home)
        export = options.export or write_reseller_export(Path(temp) / "opencode-session.json")
        lay_out_export(home / ".local" / "share" / "opencode" / "storage", export)
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
