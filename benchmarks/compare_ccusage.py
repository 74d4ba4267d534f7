"""``usage`` beside ccusage 20.0.24 on the shared fixtures laid out as a home (tests/real_home.py):
tokens and cost per session and model of Claude Code and Codex, side by side.

ccusage is installed from npm into a cache folder outside the repository and run --offline
(its embedded prices), with HOME, CLAUDE_CONFIG_DIR and CODEX_HOME pointing into a temp home;
xcsh-store syncs that home into a temp agent dir. docs/ccusage.md explains every difference.

    python benchmarks/compare_ccusage.py [--cache ~/.cache/xcsh-store-bench/ccusage]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from real_home import lay_out_home

CCUSAGE = "ccusage@20.0.24"


def install_ccusage(cache: Path) -> Path:
    binary = cache / "node_modules" / ".bin" / "ccusage"
    if not binary.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(cache), CCUSAGE],
            check=True,
            capture_output=True,
        )
    return binary


def ccusage_rows(binary: Path, environment: dict[str, str]) -> dict[tuple[str, str], list[Any]]:
    """{(session id, model): [input, output, cache read, cache write, cost]}; Codex costs are
    per session (ccusage gives no per-model cost there)."""
    rows: dict[tuple[str, str], list[Any]] = {}
    for agent in ("claude", "codex"):
        report = subprocess.run(
            [str(binary), agent, "session", "--offline", "--json"],
            env=environment, capture_output=True, text=True, check=True,
        )  # fmt: skip
        for session in json.loads(report.stdout)["sessions"]:
            if agent == "claude":
                for model in session["modelBreakdowns"]:
                    rows[(session["sessionId"], model["modelName"])] = [
                        model["inputTokens"], model["outputTokens"], model["cacheReadTokens"],
                        model["cacheCreationTokens"], model["cost"],
                    ]  # fmt: skip
            else:
                session_id = session["sessionId"][-36:]
                for name, model in session["models"].items():
                    rows[(session_id, name)] = [
                        model["inputTokens"], model["outputTokens"], model["cacheReadTokens"],
                        model["cacheCreationTokens"], session["costUSD"],
                    ]  # fmt: skip
    return rows


def xcsh_rows(environment: dict[str, str], agent_dir: Path) -> dict[tuple[str, str], list[Any]]:
    command = [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir)]
    subprocess.run([*command, "sync", "--init"], env=environment, check=True, capture_output=True)
    report = subprocess.run(
        [*command, "usage", "--by", "session", "--by", "model", "--agent", "claude",
         "--agent", "codex", "--json"],
        env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = {}
    for row in json.loads(report.stdout)["rows"]:
        session_id, model = row["keys"]
        name = model.split("/", 1)[1] if model.count("/") and not model.startswith("<") else model
        rows[(session_id, name)] = [
            row["input_tokens"], row["output_tokens"], row["cache_read_tokens"],
            row["cache_write_tokens"], row["cost"],
        ]  # fmt: skip
    return rows


@contextmanager
def fixture_home(description: str) -> Iterator[tuple[Path, dict[str, str], Path]]:
    """ccusage installed (``--cache``) and the Claude Code and Codex fixtures laid out as a home
    in a temporary folder: (ccusage's binary, an environment pointing both tools at that home, a
    scratch folder for xcsh-store's agent dir), until the block ends."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    default_cache = Path.home() / ".cache" / "xcsh-store-bench" / "ccusage"
    parser.add_argument("--cache", type=Path, default=default_cache)
    arguments = parser.parse_args()
    binary = install_ccusage(arguments.cache)
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        lay_out_home(home)
        environment = dict(
            os.environ, HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"),
            CODEX_HOME=str(home / ".codex"), XDG_CONFIG_HOME=str(home / ".config"),
            XDG_DATA_HOME=str(home / ".local" / "share"), PYTHONPATH=str(ROOT),
        )  # fmt: skip
        yield binary, environment, Path(folder)


def main() -> None:
    with fixture_home(__doc__ or "") as (binary, environment, folder):
        theirs = ccusage_rows(binary, environment)
        ours = xcsh_rows(environment, folder / "agent")
    print("| session | model | tokens (in/out/read/write) equal | xcsh-store | ccusage |")
    print("|---|---|---|---:|---:|")
    for key in sorted(set(ours) | set(theirs)):
        mine, other = ours.get(key), theirs.get(key)
        same = mine is not None and other is not None and mine[:4] == other[:4]
        cost = "-" if mine is None else ("null" if mine[4] is None else f"${mine[4]:.4f}")
        their_cost = "-" if other is None else f"${other[4]:.4f}"
        print(f"| {key[0][:8]} | {key[1]} | {'yes' if same else 'no'} | {cost} | {their_cost} |")
    for label, is_codex in (("Claude", False), ("Codex", True)):
        mine = sum(v[4] or 0 for k, v in ours.items() if k[1].startswith("gpt") == is_codex)
        # ccusage's Codex cost is per session: once per session, not per model.
        other = {(k[0], v[4]) if is_codex else k: v[4] for k, v in theirs.items()
                 if k[1].startswith("gpt") == is_codex}  # fmt: skip
        print(f"{label}: xcsh-store ${mine:.2f}, ccusage ${sum(other.values()):.2f}")


if __name__ == "__main__":
    main()
