"""The bytes of each MCP answer over hostile sessions, this tree beside an older one in the same
run (issue 39 item 7).

    python -m benchmarks.bench_mcp_bounds [REF] [--work DIR]

``REF`` (default ``a24a449``, main before issue 39) is extracted with ``git archive``, as
bench_web_bounds.py does; both trees answer (``xcsh-store mcp`` as a process, ``PYTHONPATH`` at
the tree, driven by the MCP SDK's client) over the same agent dir, written once under
``--work``: 60 sessions each in a folder 30,000 characters long, with a prompt of 3,000 control
characters (six bytes each in JSON) and an answer (with usage) of a model with a 30,000-character
name; one session whose one message is 20 MB; an artifact whose one line is a megabyte. Target:
every answer at most 64 KiB (agent_tools/bounds.py ANSWER_BYTES).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from benchmarks.bench_old_vs_new import current_label, extract
from benchmarks.harness import Row, compare, print_table
from benchmarks.index_common import WORK_DIR
from benchmarks.index_compare import ROOT
from xcsh_store.agent_tools.bounds import ANSWER_BYTES
from xcsh_store.index import SessionIndex
from xcsh_store.js import stringify

DEFAULT_REF = "a24a449"
WIDE = "w" * 30_000
COST = {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3}
USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": COST}
CONTROLS = "\x01" * 3000
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "list_sessions (limit 50)": ("list_sessions", {"limit": 50}),
    "search_sessions (limit 50)": ("search_sessions", {"query": "needle", "limit": 50}),
    "get_session": ("get_session", {"session": "wide-07"}),
    "get_entry of 20 MB (limit 50,000)": (
        "get_entry", {"session": "huge", "entry_id": "big", "limit": 50_000},
    ),
    "get_context of 20 MB": ("get_context", {"session": "huge"}),
    "read_url of a 1 MB line": ("read_url", {"session": "huge", "url": "artifact://0"}),
    "recall_prompts (limit 50)": ("recall_prompts", {"query": "needle", "limit": 50}),
    "usage by project": ("usage", {"by": "project"}),
    "usage by model": ("usage", {"by": "model"}),
}  # fmt: skip


def record(entry_id: str, parent: str | None, role: str, text: str, **extra: Any) -> bytes:
    body = {"role": role, "content": [{"type": "text", "text": text}], **extra}
    line = {"type": "message", "id": entry_id, "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z", "message": body}  # fmt: skip
    return stringify(line) + b"\n"


def header(session_id: str, cwd: str) -> bytes:
    return stringify({"type": "session", "version": 3, "id": session_id, "cwd": cwd,
                      "timestamp": "2026-01-01T00:00:00.000Z"}) + b"\n"  # fmt: skip


def agent_dir(work: Path) -> Path:
    """The agent dir of the module docstring, written and indexed once."""
    agent = work / "agent"
    if (agent / "index.db").exists():
        return agent
    folder = agent / "sessions" / "--work--"
    folder.mkdir(parents=True)
    for number in range(60):
        (folder / f"wide-{number:02d}.jsonl").write_bytes(
            header(f"wide-{number:02d}", f"/work/{WIDE}/{number}")
            + record(f"u{number}", None, "user", f"needle {number} {CONTROLS}")
            + record(f"a{number}", f"u{number}", "assistant", f"answer {number}",
                     model=f"{WIDE}-{number}", provider="anthropic", usage=USAGE)
        )  # fmt: skip
    huge = folder / "2026-01-01T00-00-00-000Z_huge.jsonl"
    huge.write_bytes(header("huge", "/work") + record("big", None, "user", "x\x02 " * 7_000_000))
    artifacts = huge.with_suffix("")
    artifacts.mkdir()
    (artifacts / "0.bash.log").write_text("\x05" * 1_000_000 + "\n")
    with SessionIndex.open(str(agent)) as index:
        index.sync()
    return agent


def answer_bytes(tree: str, agent: Path) -> dict[str, int]:
    """The bytes of the text of each answer to CALLS, from the mcp server of ``tree``."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "xcsh_store", "--agent-dir", str(agent), "--no-sync", "mcp"],
        env={**os.environ, "PYTHONPATH": tree},
        cwd=tree,
    )
    found: dict[str, int] = {}

    async def talk() -> None:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            for name, (tool, arguments) in CALLS.items():
                result = await client.call_tool(tool, arguments)
                found[name] = len(result.content[0].text.encode())  # type: ignore[union-attr]

    anyio.run(talk)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", nargs="?", default=DEFAULT_REF, help="the old code's git ref")
    parser.add_argument("--work", default=str(WORK_DIR / "mcp-bounds"))
    options = parser.parse_args()
    agent = agent_dir(Path(options.work))
    print("load before:", os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="xcsh-old-") as folder:
        commit = extract(options.ref, folder)
        new = answer_bytes(ROOT, agent)
        old = answer_bytes(folder, agent)
    print("load after:", os.getloadavg())
    rows: list[Row] = [
        compare(name, new[name], old[name], unit="B", limit=ANSWER_BYTES) for name in CALLS
    ]
    title = f"MCP answers (bench_mcp_bounds.py): {current_label()} vs {options.ref}"
    print_table(rows, title=f"{title} ({commit[:7]})")


if __name__ == "__main__":
    main()
