"""A realistic sample agent dir, written through the library, for ``xcsh-store demo``.

Four projects, two weeks of sessions: a branched debugging session with a branch summary and
labels, a session with a screenshot (stored as a blob) and a compaction, one with long tool
output in artifacts and two subagent outputs, a few short questions, a session from "today" whose
prompts are in history.db, a v1 file from an old agent version for ``migrate``, and one blob no
session references any more for ``gc``. Content and token counts are fixed by a seed; entry ids
and session ids are new on every run, as they are for a real agent.
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import shutil
import struct
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from xcsh_store.artifacts import AgentOutputManager
from xcsh_store.errors import XcshStoreError
from xcsh_store.history import HistoryStorage
from xcsh_store.jsonl import dumps_line
from xcsh_store.manager import SessionManager
from xcsh_store.paths import (
    AGENT_DIR_ENV,
    FILE_MODE,
    ensure_private_dir,
    get_default_session_dir,
    get_history_db_path,
    iso_timestamp,
    session_file_name,
)
from xcsh_store.storage import FileSessionStorage, write_atomically

DEMO_MARKER = ".xcsh-store-demo"
DEFAULT_SEED = 2411

HOME = "/home/alex/src"
WEBAPP, API, INFRA, SCRIPTS = (f"{HOME}/{name}" for name in ("webapp", "api", "infra", "scripts"))

# Dollars per million tokens: input, output, cache read, cache write.
PRICES = {
    "anthropic/claude-sonnet-4-5": (3.0, 15.0, 0.30, 3.75),
    "openai/gpt-5": (1.25, 10.0, 0.125, 0.0),
    "google/gemini-2.5-pro": (1.25, 10.0, 0.31, 0.0),
}
APIS = {"anthropic": "anthropic-messages", "openai": "openai-responses", "google": "google"}


class DemoDirError(XcshStoreError):
    """The demo would overwrite a folder that is not an earlier demo."""


@dataclass
class DemoReport:
    """Where the demo put things; ``sessions`` maps a story name to its session file."""

    agent_dir: str
    sessions: dict[str, str] = field(default_factory=dict)
    legacy_file: str = ""
    history_prompts: int = 0
    orphan_blob: str = ""


def prepare_demo_dir(agent_dir: str) -> None:
    """Make ``agent_dir`` an empty folder; an earlier demo there is replaced, anything else is
    refused (the demo must never touch a real agent dir)."""
    if os.path.isdir(agent_dir) and os.listdir(agent_dir):
        if not os.path.exists(os.path.join(agent_dir, DEMO_MARKER)):
            raise DemoDirError(
                f"{agent_dir} is not empty and was not made by `xcsh-store demo`; "
                "give the demo another folder with --agent-dir"
            )
        shutil.rmtree(agent_dir)
    ensure_private_dir(agent_dir)
    with open(os.path.join(agent_dir, DEMO_MARKER), "w", encoding="utf-8") as marker:
        marker.write("Made by `xcsh-store demo`; running the demo again replaces this folder.\n")


@contextlib.contextmanager
def _agent_dir_setting(agent_dir: str) -> Iterator[None]:
    """SessionManager finds the blob store and terminal breadcrumbs through the agent dir
    setting, not through the session folder it is given; point it at the demo while writing."""
    previous = os.environ.get(AGENT_DIR_ENV)
    os.environ[AGENT_DIR_ENV] = agent_dir
    try:
        yield
    finally:
        if previous is None:
            del os.environ[AGENT_DIR_ENV]
        else:
            os.environ[AGENT_DIR_ENV] = previous


def png_bytes(width: int, height: int, rng: random.Random) -> bytes:
    """A small noisy gradient PNG: big enough (noise does not compress) to be stored as a blob."""
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            row += bytes(
                (
                    (40 + x * 6 + rng.randrange(24)) % 256,
                    (60 + y * 5 + rng.randrange(24)) % 256,
                    (120 + rng.randrange(48)) % 256,
                )
            )
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class _Script:
    """Writes one session through SessionManager on a virtual clock.

    The manager stamps entries with the real time; ``finish`` restamps the live entries with
    the story's time and has the manager rewrite the file (``get_entries`` returns the live
    dicts and ``rewrite_entries`` exists for exactly this).
    """

    def __init__(
        self, agent_dir: str, cwd: str, start: datetime, model: str, rng: random.Random
    ) -> None:
        self.manager = SessionManager.create(cwd, get_default_session_dir(cwd, agent_dir))
        self.start = self.clock = start
        self.model = model
        self.rng = rng
        self.times: dict[str, datetime] = {}
        self.calls = 0
        self.context_tokens = rng.randrange(6000, 9000)
        self.stamp(self.manager.append_model_change(model))

    def stamp(self, entry_id: str) -> str:
        self.times[entry_id] = self.clock
        return entry_id

    def wait(self, low: float, high: float) -> None:
        self.clock += timedelta(seconds=self.rng.uniform(low, high))

    def thinking_level(self, level: str) -> str:
        return self.stamp(self.manager.append_thinking_level_change(level))

    def user(self, text: str, image: bytes | None = None) -> str:
        self.wait(25, 110)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image is not None:
            content.append(_image_block(image))
        message = {"role": "user", "content": content, "timestamp": _millis(self.clock)}
        return self.stamp(self.manager.append_message(message))

    def assistant(
        self,
        text: str | None = None,
        thinking: str | None = None,
        calls: tuple[tuple[str, dict[str, Any]], ...] = (),
    ) -> tuple[str, list[str]]:
        self.wait(5, 45)
        content: list[dict[str, Any]] = []
        if thinking:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        call_ids = []
        for name, arguments in calls:
            self.calls += 1
            call_ids.append(f"call_{self.calls:03d}")
            content.append(
                {"type": "toolCall", "id": call_ids[-1], "name": name, "arguments": arguments}
            )
        provider, model = self.model.split("/")
        message = {
            "role": "assistant",
            "content": content,
            "api": APIS[provider],
            "provider": provider,
            "model": model,
            "usage": self._usage(len(text or "") + len(thinking or "")),
            "stopReason": "toolUse" if calls else "stop",
            "timestamp": _millis(self.clock),
        }
        return self.stamp(self.manager.append_message(message)), call_ids

    def _usage(self, written_chars: int) -> dict[str, Any]:
        fresh = self.rng.randrange(600, 3200)
        output = max(40, written_chars // 4) + self.rng.randrange(60, 700)
        cache_write = self.rng.randrange(400, 2800) if self.model.startswith("anthropic") else 0
        cache_read = self.context_tokens
        self.context_tokens += fresh + output + self.rng.randrange(500, 2500)
        prices = PRICES[self.model]
        parts = [
            count * price / 1_000_000
            for count, price in zip((fresh, output, cache_read, cache_write), prices, strict=True)
        ]
        return {
            "input": fresh,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "totalTokens": fresh + output + cache_read + cache_write,
            "cost": {
                "input": round(parts[0], 6),
                "output": round(parts[1], 6),
                "cacheRead": round(parts[2], 6),
                "cacheWrite": round(parts[3], 6),
                "total": round(sum(parts), 6),
            },
        }

    def tool(
        self, call_id: str, name: str, text: str, error: bool = False, image: bytes | None = None
    ) -> str:
        self.wait(1, 40)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image is not None:
            content.append(_image_block(image))
        message = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": content,
            "isError": error,
            "timestamp": _millis(self.clock),
        }
        return self.stamp(self.manager.append_message(message))

    def act(
        self,
        name: str,
        arguments: dict[str, Any],
        result: str,
        text: str | None = None,
        thinking: str | None = None,
        error: bool = False,
        image: bytes | None = None,
    ) -> str:
        """An assistant turn with one tool call and its result; returns the assistant entry."""
        entry_id, (call_id,) = self.assistant(text, thinking, ((name, arguments),))
        self.tool(call_id, name, result, error, image)
        return entry_id

    def artifact(self, content: str, tool_type: str) -> str:
        return self.manager.save_artifact(content, tool_type)

    def finish(self, title: str | None = None) -> str:
        manager = self.manager
        if title:
            manager.set_session_name(title, source="auto")
        manager.get_header()["timestamp"] = iso_timestamp(self.start)
        for entry in manager.get_entries():
            moment = self.times.get(entry.get("id", ""))
            if moment is not None:
                entry["timestamp"] = iso_timestamp(moment)
        manager.rewrite_entries()
        manager.close()
        path = manager.get_session_file()
        assert path is not None
        os.utime(path, (self.clock.timestamp(), self.clock.timestamp()))
        return path


def _image_block(data: bytes) -> dict[str, Any]:
    return {
        "type": "image",
        "data": base64.b64encode(data).decode("ascii"),
        "mimeType": "image/png",
    }


def _day(today: datetime, days_ago: int, hour: int, minute: int) -> datetime:
    return today - timedelta(days=days_ago) + timedelta(hours=hour, minutes=minute)


def build_demo(agent_dir: str, seed: int = DEFAULT_SEED, now: datetime | None = None) -> DemoReport:
    """Write the sample agent dir into ``agent_dir`` (which should be empty; see
    :func:`prepare_demo_dir`). The story happens over the two weeks before ``now``."""
    agent_dir = os.path.abspath(agent_dir)
    now = (now or datetime.now(UTC)).astimezone(UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    rng = random.Random(seed)
    report = DemoReport(agent_dir)
    with _agent_dir_setting(agent_dir):
        report.sessions["login"] = _flaky_login(agent_dir, _day(today, 12, 9, 14), rng)
        report.sessions["darkmode"] = _dark_mode(agent_dir, _day(today, 9, 14, 2), rng)
        report.sessions["orders"] = _slow_orders(agent_dir, _day(today, 6, 10, 31), rng)
        report.sessions["bucket"] = _staging_bucket(agent_dir, _day(today, 4, 16, 20), rng)
        for index, (cwd, days_ago, hour, question, answer, model) in enumerate(QUICK_QUESTIONS):
            script = _Script(agent_dir, cwd, _day(today, days_ago, hour, 5), model, rng)
            script.user(question)
            script.assistant(answer)
            report.sessions[f"quick-{index}"] = script.finish()
        start = min(now - timedelta(minutes=14), today + timedelta(hours=23))
        report.sessions["ratelimit"], prompts = _rate_limit(agent_dir, start, rng)
        report.history_prompts = _remember_prompts(agent_dir, prompts)
        report.legacy_file = _legacy_session(agent_dir, _day(today, 30, 11, 0), rng)
        report.orphan_blob = _orphan_blob(agent_dir, now, rng)
    return report


# --------------------------------------------------------------------------------------------
# The stories


def _flaky_login(agent_dir: str, start: datetime, rng: random.Random) -> str:
    s = _Script(agent_dir, WEBAPP, start, "anthropic/claude-sonnet-4-5", rng)
    s.thinking_level("medium")
    s.user(
        "The login test in tests/e2e/test_login.py fails about one run in five on CI. "
        "Can you find out why and fix it?"
    )
    s.act(
        "read",
        {"path": "tests/e2e/test_login.py"},
        "def test_login(page, user):\n    page.goto('/login')\n"
        "    page.fill('#email', user.email)\n"
        "    page.fill('#password', user.password)\n    page.click('button[type=submit]')\n"
        "    page.goto('/dashboard')\n    expect(page.locator('#dashboard')).to_be_visible()\n",
        text="Let me read the test first.",
        thinking="A flaky end-to-end test usually means a race. Read the test, then run it in a "
        "loop to see the failure.",
    )
    runs = [
        f"tests/e2e/test_login.py::test_login[run{n:02d}] "
        + ("FAILED" if n in (3, 8, 14, 17) else "PASSED")
        for n in range(1, 21)
    ]
    failure = (
        "E   TimeoutError: Locator.to_be_visible: waiting for locator('#dashboard')\n"
        "E   Call log: navigated to '/dashboard', redirected to '/login?next=/dashboard'"
    )
    full = "\n".join(runs) + "\n\n" + "\n\n".join([failure] * 4) + "\n4 failed, 16 passed in 61.2s"
    artifact = s.artifact(full, "bash")
    s.act(
        "bash",
        {"command": "pytest tests/e2e/test_login.py --count 20 -p no:randomly"},
        "\n".join(runs[:6]) + f"\n…\n{failure}\n4 failed, 16 passed in 61.2s\n\n"
        f"[Full output: artifact://{artifact}]",
    )
    diagnosis, _ = s.assistant(
        "4 of 20 runs fail waiting for #dashboard: the test opens /dashboard before the login "
        "redirect has set the session cookie, so the app sends it back to /login. Two ways out: "
        "freeze the clock in the auth middleware, or wait for the session cookie before "
        "navigating. I'll try the clock first since it is the smaller change."
    )
    s.user("Try mocking the clock first.")
    s.act(
        "edit",
        {"path": "tests/e2e/conftest.py"},
        "Applied 1 edit to tests/e2e/conftest.py (+9 lines)",
        text="Adding a frozen_clock fixture that pins time for the auth middleware.",
    )
    s.act(
        "bash",
        {"command": "pytest tests/e2e/test_login.py --count 20"},
        "3 failed, 17 passed in 58.9s",
    )
    s.assistant(
        "Freezing the clock did not help: 3 of 20 runs still fail, so time is not the cause."
    )
    s.stamp(
        s.manager.branch_with_summary(
            diagnosis,
            "Tried freezing the clock with a frozen_clock fixture in tests/e2e/conftest.py: "
            "still 3/20 failures, so the race is not about time. Reverted the fixture.",
        )
    )
    s.user("OK, wait for the session cookie instead.")
    s.act(
        "edit",
        {"path": "tests/e2e/test_login.py"},
        "Applied 1 edit to tests/e2e/test_login.py (+3 -1 lines)",
        text="The test will wait until the `session` cookie exists before opening /dashboard.",
    )
    s.act(
        "bash",
        {"command": "pytest tests/e2e/test_login.py --count 50"},
        "50 passed in 148.3s",
    )
    fixed, _ = s.assistant(
        "Fixed: the test now waits for the session cookie after submitting the form, and 50 of "
        "50 runs pass. Suggested commit message: `test(e2e): wait for the session cookie before "
        "visiting /dashboard`."
    )
    s.stamp(s.manager.append_label_change(diagnosis, "diagnosis"))
    s.stamp(s.manager.append_label_change(fixed, "fixed"))
    return s.finish("Fix the flaky login test")


def _dark_mode(agent_dir: str, start: datetime, rng: random.Random) -> str:
    s = _Script(agent_dir, WEBAPP, start, "anthropic/claude-sonnet-4-5", rng)
    s.user(
        "Here's a screenshot of the settings page. Add a dark mode toggle next to 'Language' "
        "and remember the choice.",
        image=png_bytes(48, 32, rng),
    )
    s.act(
        "read",
        {"path": "src/settings/SettingsPage.tsx"},
        'export function SettingsPage() {\n  return (\n    <Panel title="Settings">\n'
        "      <LanguageSelect />\n      <NotificationToggles />\n    </Panel>\n  );\n}\n",
        thinking="The screenshot shows a Panel with Language and Notifications rows. A ThemeToggle "
        "belongs right after LanguageSelect; persistence can use localStorage.",
        text="The settings panel is in SettingsPage.tsx.",
    )
    s.act(
        "edit",
        {"path": "src/settings/SettingsPage.tsx"},
        "Applied 2 edits to src/settings/SettingsPage.tsx (+14 -1 lines)",
        text="Adding a ThemeToggle after the language picker; the choice goes to localStorage.",
    )
    kept = s.user("Make it follow the system setting by default.")
    s.act(
        "edit",
        {"path": "src/theme/useTheme.ts"},
        "Created src/theme/useTheme.ts (31 lines)",
        text="useTheme reads prefers-color-scheme until the user picks a theme explicitly.",
    )
    s.stamp(
        s.manager.append_compaction(
            "## Goal\nA dark mode toggle on the settings page that follows the system setting "
            "until the user chooses.\n## Done\n- ThemeToggle next to the language picker in "
            "SettingsPage.tsx\n- useTheme hook: prefers-color-scheme by default, explicit choice "
            "in localStorage\n## Next\n- visual tests for both themes",
            "Dark mode toggle that follows the system theme",
            kept,
            48_210,
        )
    )
    s.user("Now add a screenshot test for both themes.")
    s.act(
        "bash",
        {"command": "npx playwright test tests/visual/theme.spec.ts --update-snapshots"},
        "Running 2 tests using 2 workers\n  ✓ theme › light (1.9s)\n  ✓ theme › dark (2.1s)\n"
        "2 passed (4.3s)",
        image=png_bytes(40, 28, rng),
    )
    s.assistant(
        "Added tests/visual/theme.spec.ts with a light and a dark snapshot of the settings page; "
        "both pass and the snapshots are in tests/visual/__snapshots__/."
    )
    return s.finish("Dark mode toggle")


_EXPLAIN = """\
Gather  (cost=1000.43..389213.55 rows=48 width=96) (actual time=2301.2..2379.8 rows=37 loops=1)
  Workers Planned: 2
  ->  Nested Loop  (cost=0.43..388208.75 rows=20 width=96)
        ->  Parallel Seq Scan on order_items oi  (cost=0.00..371204.00 rows=1708333 width=40)
              (actual time=0.03..2233.1 rows=1366667 loops=3)
              Filter: (order_id = ANY ('{...}'::bigint[]))
              Rows Removed by Filter: 1366630
        ->  Index Scan using products_pkey on products p  (cost=0.43..8.45 rows=1 width=56)
Planning Time: 0.412 ms
Execution Time: 2381.4 ms"""

_REVIEW = """{
  "verdict": "approve with changes",
  "findings": [
    {"severity": "high", "file": "migrations/0042_order_items_order_id_idx.sql",
     "note": "CREATE INDEX blocks writes to order_items; use CREATE INDEX CONCURRENTLY"},
    {"severity": "low", "file": "api/orders.py",
     "note": "the N+1 on products disappears with the join; drop the prefetch loop"}
  ]
}
"""


def _slow_orders(agent_dir: str, start: datetime, rng: random.Random) -> str:
    s = _Script(agent_dir, API, start, "openai/gpt-5", rng)
    s.thinking_level("high")
    s.user("GET /orders takes 2-3 seconds in production. Find out why.")
    outputs = AgentOutputManager(s.manager.get_artifacts_dir)
    explore = outputs.allocate("Explore")
    s.act(
        "task",
        {"agent": "explore", "task": "Find how GET /orders builds its database query"},
        f"Explore finished: /orders loads orders, then order_items by order_id in one IN query, "
        f"then products one by one. Full report: agent://{explore}",
        text="I'll have an explore agent map the request path while I look at the query plan.",
    )
    _write_output(
        s.manager.get_artifacts_dir(),
        explore,
        "# How GET /orders queries the database\n\n1. `api/orders.py:list_orders` selects the "
        "page of orders.\n2. It loads `order_items` with `WHERE order_id = ANY(:ids)`.\n"
        "3. For each item it fetches the product (`products_pkey`), an N+1.\n\n"
        "No index on `order_items.order_id` was found in `migrations/`.\n",
    )
    artifact = s.artifact(_EXPLAIN, "bash")
    s.act(
        "bash",
        {"command": "psql $DATABASE_URL -c 'EXPLAIN ANALYZE <the /orders items query>'"},
        _EXPLAIN.splitlines()[0] + "\n…\nExecution Time: 2381.4 ms\n\n"
        f"[Full output: artifact://{artifact}]",
    )
    s.act(
        "edit",
        {"path": "migrations/0042_order_items_order_id_idx.sql"},
        "Created migrations/0042_order_items_order_id_idx.sql (3 lines)",
        text="The planner scans all 4.1M order_items rows because order_items.order_id has no "
        "index. Adding one.",
    )
    review = outputs.allocate("Review")
    s.act(
        "task",
        {"agent": "review", "task": "Review the migration and the /orders query change"},
        f"Review finished: approve with changes, 2 findings. agent://{review}",
    )
    _write_output(s.manager.get_artifacts_dir(), review, _REVIEW)
    s.assistant(
        "Found it: a sequential scan on order_items (Execution Time 2381 ms). With the new index "
        "the same query takes 12 ms. The reviewer asks to build the index CONCURRENTLY so "
        "writes are not blocked during the deploy; I changed the migration accordingly."
    )
    return s.finish("Why is GET /orders slow?")


def _write_output(artifacts_dir: str | None, output_id: str, text: str) -> None:
    """What the task tool does with a subagent's answer: ``<artifacts>/<id>.md``."""
    assert artifacts_dir is not None
    ensure_private_dir(artifacts_dir)
    path = os.path.join(artifacts_dir, f"{output_id}.md")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE), "w") as handle:
        handle.write(text)


def _staging_bucket(agent_dir: str, start: datetime, rng: random.Random) -> str:
    s = _Script(agent_dir, INFRA, start, "google/gemini-2.5-pro", rng)
    s.user(
        "Plan a new staging bucket for uploads with versioning and a 30-day lifecycle rule for "
        "old versions."
    )
    s.act(
        "bash",
        {"command": "terraform plan -target=module.uploads_staging"},
        "Terraform will perform the following actions:\n"
        "  # module.uploads_staging.google_storage_bucket.this will be created\n"
        "  + versioning { enabled = true }\n"
        '  + lifecycle_rule { action { type = "Delete" } condition { days_since_noncurrent_time'
        " = 30 } }\nPlan: 2 to add, 0 to change, 0 to destroy.",
        text="Writing modules/uploads_staging and planning only that module.",
    )
    s.stamp(
        s.manager.append_custom_message_entry(
            "cost-estimate",
            "Estimated monthly cost of this plan: +$0.85 (storage, 40 GB).",
            True,
        )
    )
    s.assistant(
        "The plan adds the bucket with versioning and a rule deleting noncurrent versions "
        "after 30 days, plus the IAM binding for the uploader service account. Nothing else "
        "changes. Apply with `terraform apply -target=module.uploads_staging`."
    )
    return s.finish("Staging uploads bucket")


QUICK_QUESTIONS = (
    (
        WEBAPP,
        13,
        10,
        "What does the staleTime option in react-query actually change?",
        "staleTime is how long fetched data counts as fresh. While it is fresh, mounting a "
        "component or refocusing the window does not refetch; the default 0 refetches on "
        "every such event.",
        "anthropic/claude-sonnet-4-5",
    ),
    (
        API,
        11,
        15,
        "Write a regex that matches ISO 8601 dates with an optional time part.",
        r"`^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$` matches "
        "2026-03-01, 2026-03-01T09:30 and 2026-03-01T09:30:00.123Z.",
        "openai/gpt-5",
    ),
    (
        INFRA,
        10,
        11,
        "Why does terraform fmt -check fail on CI but pass on my laptop?",
        "CI runs Terraform 1.9 and your laptop 1.5; fmt rules changed in between (alignment "
        "of = in blocks). Pin the version in .terraform-version and run fmt with it.",
        "google/gemini-2.5-pro",
    ),
    (
        WEBAPP,
        8,
        17,
        "Rename usrCtx to userContext everywhere under src/.",
        "Renamed usrCtx to userContext in 14 files under src/; the type checker and the unit "
        "tests pass.",
        "anthropic/claude-sonnet-4-5",
    ),
    (
        API,
        7,
        9,
        "Explain this: psycopg.errors.DeadlockDetected while backfilling order totals.",
        "Two backfill workers update the same orders in different orders. Sort the ids and "
        "update in batches in that order, or run one worker: the deadlock goes away.",
        "openai/gpt-5",
    ),
    (
        WEBAPP,
        5,
        13,
        "Bump vite to 5.4 and fix the build warnings.",
        "vite is at 5.4.11; the two warnings were a deprecated `build.polyfillModulePreload` "
        "option and a CJS import of lodash, both fixed.",
        "anthropic/claude-sonnet-4-5",
    ),
    (
        API,
        2,
        16,
        "Add a --dry-run flag to scripts/backfill_orders.py.",
        "--dry-run now runs the queries inside a transaction that is rolled back and prints how "
        "many rows each batch would change.",
        "openai/gpt-5",
    ),
)


def _rate_limit(
    agent_dir: str, start: datetime, rng: random.Random
) -> tuple[str, list[tuple[str, str]]]:
    """Today's session; its prompts are also what history.db remembers."""
    s = _Script(agent_dir, API, start, "anthropic/claude-sonnet-4-5", rng)
    prompts = [
        "Add rate limiting to POST /orders: 10 requests per minute per API key.",
        "Return a Retry-After header with the 429 too.",
    ]
    s.user(prompts[0])
    s.act(
        "read",
        {"path": "api/middleware.py"},
        "class AuthMiddleware:\n    def __call__(self, request):\n        key = "
        "request.headers.get('X-Api-Key')\n        ...",
        text="Looking at the middleware stack first.",
    )
    s.act(
        "edit",
        {"path": "api/ratelimit.py"},
        "Created api/ratelimit.py (42 lines)",
        text="A sliding-window limiter in Redis keyed by API key, applied to POST /orders.",
    )
    s.user(prompts[1])
    s.act(
        "bash",
        {"command": "pytest tests/test_ratelimit.py -q"},
        "6 passed in 0.84s",
        text="Adding Retry-After (seconds until the window frees a slot) and a test for it.",
    )
    s.assistant(
        "POST /orders now allows 10 requests per minute per API key; the 11th gets a 429 with "
        "Retry-After. Tests cover the limit, the header and separate keys."
    )
    return s.finish("Rate limit POST /orders"), [(prompt, API) for prompt in prompts]


def _remember_prompts(agent_dir: str, prompts: list[tuple[str, str]]) -> int:
    with HistoryStorage.open(get_history_db_path(agent_dir)) as history:
        for prompt, cwd in prompts:
            history.add(prompt, cwd)
        history.flush()
    return len(prompts)


def _legacy_session(agent_dir: str, start: datetime, rng: random.Random) -> str:
    """A v1 file as an old pi wrote it: no version, no ids, no parent links."""
    session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    moments = [start + timedelta(seconds=offset) for offset in (0, 5, 40, 95, 130)]
    usage = {"input": 1420, "output": 380, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1800}
    records: list[dict[str, Any]] = [
        {
            "type": "session",
            "id": session_id,
            "timestamp": iso_timestamp(moments[0]),
            "cwd": SCRIPTS,
        }
    ]
    turns = [
        ("user", "Write a script that renames my photos by their EXIF date."),
        ("assistant", "Here is rename_photos.py: it reads DateTimeOriginal with Pillow and renames "
         "each file to YYYY-MM-DD_HHMMSS.jpg, adding -1, -2 on collisions."),
        ("user", "Skip files without EXIF data instead of failing."),
        ("assistant", "Done: files without DateTimeOriginal are now listed at the end as skipped."),
    ]  # fmt: skip
    for (role, text), moment in zip(turns, moments[1:], strict=True):
        message: dict[str, Any] = {
            "role": role,
            "content": [{"type": "text", "text": text}],
            "timestamp": _millis(moment),
        }
        if role == "assistant":
            message.update(provider="anthropic", model="claude-3-5-sonnet", usage=usage)
        records.append({"type": "message", "timestamp": iso_timestamp(moment), "message": message})
    folder = get_default_session_dir(SCRIPTS, agent_dir)
    path = os.path.join(folder, session_file_name(iso_timestamp(start), session_id))
    write_atomically(FileSessionStorage(), path, (dumps_line(record) for record in records))
    os.utime(path, (moments[-1].timestamp(), moments[-1].timestamp()))
    return path


def _orphan_blob(agent_dir: str, now: datetime, rng: random.Random) -> str:
    """An image pasted into a prompt that was never sent: a blob nothing references."""
    with SessionManager.in_memory(WEBAPP) as draft:
        stored = draft.put_blob(png_bytes(36, 24, rng))
    three_days_ago = (now - timedelta(days=3)).timestamp()
    os.utime(stored.path, (three_days_ago, three_days_ago))
    return stored.hash
