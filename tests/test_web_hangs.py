"""One small message cannot hang ``xcsh-store serve`` (issue 39 item 3): a real server
process, asked for pages whose code blocks backtrack in Pygments (the review's ``urbiscript``
on a quote and 48 backslashes, days; ``c`` on blank lines, quadratic, past its lexer's cap and
at it), answers them and every other page, and stops on SIGINT; and a server made to highlight
with the exponential lexer (an hour a block) still stops on SIGINT, its highlighting workers
killed."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from html import unescape
from pathlib import Path

import pytest
from session_builder import header, message, sessions_dir, sync, write_session
from web_server import DEADLINE, Server, running_server

pytest.importorskip("starlette")

from xcsh_store.web.highlight import Worker, checked_lexers

URBISCRIPT = '```urbiscript\n"' + "\\" * 48 + "\n```\n"
# Within the 20,000 characters the session page shows of an entry (a longer one is shown cut,
# as plain text): quadratic, a minute.
BLANK_C = "```c\n" + "\n" * 19_000 + "```\n"
# At the cap of ``c``'s lexer (lexers.txt): the input that capped it, highlighted or plain.
CAP_C = '"' + "\n" * (checked_lexers()["c"].max_chars - 1)
CHILD = Path(__file__).resolve().parent / "highlight_child.py"


def hostile_sessions(agent_dir: Path) -> None:
    """Sessions ``urbi-N``, ``blank-c-N`` and ``cap-c-N`` (two of each, more than the pages
    made at once) and ``plain``."""
    folder = sessions_dir(agent_dir)
    for number in range(2):
        blocks = (("urbi", URBISCRIPT), ("blank-c", BLANK_C), ("cap-c", f"```c\n{CAP_C}\n```\n"))
        for name, text in blocks:
            session = f"{name}-{number}"
            write_session(
                folder / f"{session}.jsonl",
                [header(session), message("u1", None, "user", f"look at this\n\n{text}")],
            )
    write_session(
        folder / "plain.jsonl", [header("plain"), message("u1", None, "user", "nothing to see")]
    )
    sync(agent_dir)


def children(pid: int) -> set[int]:
    """The processes ``pid`` started, still running."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def stop_with_sigint(server: Server) -> int:
    server.process.send_signal(signal.SIGINT)
    return server.process.wait(timeout=DEADLINE)


def test_hostile_code_blocks_neither_hang_pages_nor_the_server(agent_dir):
    hostile_sessions(agent_dir)
    hostile = [f"/session/{name}-{n}" for name in ("urbi", "blank-c", "cap-c") for n in range(2)]
    with running_server(agent_dir) as server, ThreadPoolExecutor(len(hostile) + 1) as pool:
        pending = [pool.submit(server.request, path) for path in hostile]
        plain = pool.submit(server.request, "/session/plain")
        assert plain.result().status == 200
        answers = [future.result() for future in pending]
        assert [answer.status for answer in answers] == [200] * len(hostile)
        # Shown, plain: the backslashes whole, escaped.
        assert b"\\" * 48 in answers[0].body
        # At its cap, shown whole: highlighted in its second, or plain.
        shown = re.search(rb'<pre class="code"><code>(.*?)</code></pre>', answers[-1].body, re.S)
        assert shown is not None
        assert unescape(re.sub(r"</?span[^>]*>", "", shown[1].decode())) == CAP_C + "\n"
        assert stop_with_sigint(server) == 0


def test_sigint_stops_a_server_whose_pages_highlight_for_an_hour(agent_dir):
    hostile_sessions(agent_dir)
    program = (sys.executable, str(CHILD))
    with running_server(agent_dir, program=program) as server, ThreadPoolExecutor(2) as pool:
        for number in range(2):
            pool.submit(server.request, f"/session/urbi-{number}")
        # Both pages are being highlighted once both workers run (each page starts one).
        end = time.monotonic() + DEADLINE
        while len(workers := children(server.process.pid)) < 2:
            assert time.monotonic() < end, "the pages never started highlighting"
            time.sleep(0.1)
        assert stop_with_sigint(server) == 0
    for worker in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(worker, 0)


def test_a_worker_stops_a_block_that_runs_over_and_ends_when_its_server_is_gone():
    """What keeps a worker whose server died without killing it (SIGKILL) from spinning on a
    hostile block for days: it stops the block at the block's time by itself, and ends when
    its requests close."""
    worker = Worker()
    assert worker.wait_ready(DEADLINE)
    assert worker.ask("urbiscript", '"' + "\\" * 48, 0.5) is None
    # The same, as lexer_check.py asks: stopped, with the CPU seconds it had taken.
    stopped = worker.answer("urbiscript", '"' + "\\" * 48, 0.5)
    assert stopped is not None and stopped.ran_over and stopped.html is None
    assert stopped.cpu_seconds > 0
    assert worker.ask("json", "[1]", DEADLINE) is not None  # alive, and ready again
    assert worker.process.stdin is not None
    worker.process.stdin.close()
    assert worker.process.wait(timeout=DEADLINE) == 0
    worker.close()
