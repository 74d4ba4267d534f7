"""``usage --by block`` beside ``ccusage blocks`` (20.0.24) on the Claude Code fixtures laid
out as a home (tests/real_home.py): each 5-hour window's start, requests, tokens and cost, side
by side (docs/ccusage.md explains the differences).

    python benchmarks/compare_ccusage_blocks.py [--cache ~/.cache/xcsh-store-bench/ccusage]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


from benchmarks.compare_ccusage import fixture_home


def ccusage_blocks(binary: Path, environment: dict[str, str]) -> dict[str, list[Any]]:
    """{window start: [requests, input, output, cache read, cache write, cost]}."""
    report = subprocess.run(
        [str(binary), "claude", "blocks", "--offline", "--json"],
        env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = {}
    for block in json.loads(report.stdout)["blocks"]:
        if block.get("isGap"):
            continue
        tokens = block["tokenCounts"]
        found[block["startTime"][:16]] = [
            block["entries"], tokens["inputTokens"], tokens["outputTokens"],
            tokens["cacheReadInputTokens"], tokens["cacheCreationInputTokens"], block["costUSD"],
        ]  # fmt: skip
    return found


def xcsh_blocks(environment: dict[str, str], agent_dir: Path) -> dict[str, list[Any]]:
    command = [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir)]
    subprocess.run([*command, "sync", "--init"], env=environment, check=True, capture_output=True)
    report = subprocess.run(
        [*command, "usage", "--by", "block", "--agent", "claude", "--json"],
        env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {
        block["start"][:16]: [
            block["entries"],
            block["input_tokens"],
            block["output_tokens"],
            block["cache_read_tokens"],
            block["cache_write_tokens"],
            block["cost"],
        ]
        for block in json.loads(report.stdout)["blocks"]
        if not block["gap"]
    }


def main() -> None:
    with fixture_home(__doc__ or "") as (binary, environment, folder):
        theirs = ccusage_blocks(binary, environment)
        ours = xcsh_blocks(environment, folder / "agent")

    def cells(row: list[Any] | None, number: int) -> str:
        if row is None:
            return "–"
        value = row[number]
        if number == 5:
            return "null" if value is None else f"${value:.4f}"
        return f"{value:,}"

    print("| window start (UTC) | requests | input | output | cache read | cache write | cost |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for start in sorted(set(ours) | set(theirs)):
        mine, other = ours.get(start), theirs.get(start)
        shown = [
            f"{cells(mine, number)} / {cells(other, number)}" if cells(mine, number)
            != cells(other, number) else cells(mine, number)
            for number in range(6)
        ]  # fmt: skip
        print(f"| {start.replace('T', ' ')} | " + " | ".join(shown) + " |")


if __name__ == "__main__":
    main()
