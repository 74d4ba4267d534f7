"""The web app's pages on real sessions, in a real headless Chromium (as test_web_browser.py):
the real Claude Code and Codex fixtures laid out as a home (real_home.py) beside a branched
session and a hostile one written in markdown. At 1280 and at 390 px (a phone) no element
overflows its box, the usage charts' labels keep apart and inside their chart, a link to an
entry scrolls to it, markdown is rendered and nothing a session says runs, and the keys work.

Each page's screenshot is taken at both widths (into $XCSH_STORE_SCREENSHOTS when set: the
docs' images are made so; else into the test's temp dir) and must not be blank."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import distinct_bytes, headless_chromium, wait_until
from isolation import isolated_environment
from real_home import lay_out_home
from session_builder import flux_records, header, message, sessions_dir, write_session
from web_server import running_server

from xcsh_store.index import SessionIndex, entry_summary

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

WIDTHS = (1280, 390)
# A real Codex session that patches a file with apply_patch (its diff, in the screenshots).
PATCHING = (
    "AcidicSoil__codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-"
    "940e6b99603c.jsonl"
)
LONG_TITLE = "a title of three hundred characters " * 9
MARKDOWN = (
    "## Plan\n\nThe **flux** capacitor needs `1.21 GW`:\n\n"
    # Ruby: its lexer is one the web app highlights with (xcsh_store/web/lexers.txt).
    "```ruby\ndef charge(gigawatts)\n  gigawatts * 2\nend\n```\n\n"
    "| part | state |\n|---|---|\n| clock | ok |\n\n"
    '<script>window.pwned = 1</script> <img src=x onerror="window.pwned = 2">\n\n'
    "[click me](javascript:window.pwned=3) ![pic](javascript:window.pwned=4)\n"
)
TOOL_OUTPUT = "\n".join(f"line {number} of the tool's output" for number in range(1, 61))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A home with the real fixtures, an agent dir with a branched, a long-titled and a
    markdown session, synced; the ids of the sessions the tests open."""
    root = tmp_path_factory.mktemp("layout")
    laid_out = lay_out_home(root / "home")
    agent_dir = root / "agent"
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "branched.jsonl",
        [*flux_records(), message("a3", "u3", "assistant", "the clock tower at 10:04")],
    )
    write_session(
        folder / "long-title.jsonl",
        [header("sess-long-title", title=LONG_TITLE), message("u1", None, "user", "hi")],
    )
    tool_call = {
        **message("a1", "u1", "assistant", ""),
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Which **part** first?"},
                {"type": "text", "text": MARKDOWN},
                {
                    "type": "toolCall",
                    "id": "c1",
                    "name": "bash",
                    "arguments": {"cmd": "ls -la /tmp | head -5"},
                },
                {
                    "type": "toolCall",
                    "id": "c2",
                    "name": "edit",
                    "arguments": {
                        "path": "flux.rb",
                        "oldText": "POWER = 1.21\n",
                        "newText": "POWER = 2.42\n",
                    },
                },
            ],
        },
    }
    result = {
        **message("r1", "a1", "user", ""),
        "message": {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "content": [{"type": "text", "text": TOOL_OUTPUT}],
        },
    }
    write_session(
        folder / "markdown.jsonl",
        [header("sess-markdown"), message("u1", None, "user", MARKDOWN), tool_call, result],
    )
    environment = {**os.environ, **isolated_environment(laid_out.home)}
    subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "sync"],
        env=environment, check=True, capture_output=True,
    )  # fmt: skip
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        sessions = index.list_sessions()
        by_agent = {
            agent: max(
                (session for session in sessions if session.agent == agent),
                key=lambda session: session.entry_count,
            )
            for agent in ("claude", "codex")
        }
        claude = by_agent["claude"]
        middle = index.branch(claude, claude.last_entry_id)
        target = next(
            row.id for row in middle[len(middle) // 2 :] if row.role in ("user", "assistant")
        )
        # The first apply_patch of a real Codex session: its diff, for the screenshots.
        patched = next(s for s in sessions if s.path == str(laid_out.files[PATCHING]))
        patch_entry = next(
            entry["id"]
            for entry in index.branch_entries(patched, None)
            if "→ apply_patch" in entry_summary(entry)[1]
        )
        found = {
            "patched": patched.path,
            "patch_entry": patch_entry,
            "agent_dir": agent_dir,
            "environment": environment,
            "claude": claude.path,
            "codex": by_agent["codex"].path,
            "target": target,
        }
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from headless_chromium()


@pytest.fixture(scope="module")
def server(home: dict[str, Any]) -> Iterator[str]:
    with running_server(home["agent_dir"], env=home["environment"]) as running:
        yield str(running.printed["url"]).rstrip("/")


def pages(home: dict[str, Any]) -> dict[str, str]:
    """The pages of the screenshots, by name."""
    return {
        "list": "/",
        "branched": "/session/sess-branched",
        "claude": "/session?" + json_query(path=home["claude"]),
        "codex": "/session?" + json_query(path=home["codex"]),
        "edit": "/session?"
        + json_query(path=home["patched"], entry=home["patch_entry"])
        + f"#entry-{home['patch_entry']}",
        "search": "/search?q=the",
        "usage": "/usage?by=day&metric=cost",
        "blocks": "/usage?by=block&metric=tokens",
    }


def json_query(**parameters: str) -> str:
    from urllib.parse import urlencode

    return urlencode(parameters)


def at_width(browser: Any, width: int) -> None:
    """The page laid out as a screen ``width`` CSS pixels wide (a phone's at 390)."""
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
    )


OVERFLOWING = """
const found = [];
const root = document.documentElement;
if (root.scrollWidth > root.clientWidth) found.push("page " + root.scrollWidth);
for (const element of document.querySelectorAll("body *")) {
  const style = getComputedStyle(element);
  if (style.display === "none" || style.display.startsWith("inline")) continue;
  if (style.overflowX !== "visible") continue;  // cut (an ellipsis) or scrolled on purpose
  if (element.closest("svg") || element.clientWidth === 0) continue;
  if (element.scrollWidth > element.clientWidth + 1) {
    found.push(element.tagName + "." + element.className + " " + element.scrollWidth);
  }
}
return found.slice(0, 10);
"""


@pytest.mark.parametrize("width", WIDTHS)
def test_no_element_overflows_its_box(browser, server, home, shots, width):
    at_width(browser, width)
    for name, path in pages(home).items():
        browser.get(server + path)
        assert browser.execute_script(OVERFLOWING) == [], name
        shot(browser, shots, f"{name}-{width}")


def shot(browser: Any, folder: Path, name: str) -> None:
    path = folder / f"{name}.png"
    assert browser.save_screenshot(str(path))
    assert distinct_bytes(path.read_bytes()) > 16, f"{name}: the screenshot is blank"


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: $XCSH_STORE_SCREENSHOTS (docs/images) or a temp dir."""
    folder = os.environ.get("XCSH_STORE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return Path(folder)
    return tmp_path_factory.mktemp("shots")


def test_a_long_title_keeps_to_its_column(browser, server, home):
    at_width(browser, 1280)
    browser.get(server + "/")
    row = next(
        row
        for row in browser.find_elements(By.CSS_SELECTOR, "table.sessions tr.row")
        if "three hundred" in row.text
    )
    cells = row.find_elements(By.TAG_NAME, "td")
    widths = [cell.size["width"] for cell in cells]
    header = [cell.size["width"] for cell in browser.find_elements(By.CSS_SELECTOR, "thead th")]
    assert widths == header and all(width > 30 for width in widths)
    assert cells[0].size["height"] < 60  # one line and the id line: cut, not wrapped


def test_on_a_phone_the_title_gets_the_width_and_the_project_folds_under_it(browser, server):
    at_width(browser, 390)
    browser.get(server + "/")
    table = browser.find_element(By.CSS_SELECTOR, "table.sessions")
    heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th") if th.text]
    assert "Project" not in heads
    rows = table.find_elements(By.CSS_SELECTOR, "tr.row")
    for row in rows:
        title = row.find_element(By.CSS_SELECTOR, "td")
        assert title.size["width"] >= table.size["width"] * 0.5  # half the width or more
        project = title.find_element(By.CSS_SELECTOR, ".project")
        assert project.is_displayed() and project.text.endswith("·")
    at_width(browser, 1280)
    browser.get(server + "/")
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "thead th")]
    assert "Project" in heads
    assert not browser.find_element(By.CSS_SELECTOR, "tr.row .project").is_displayed()


LABEL_BOXES = """
const result = [];
for (const figure of document.querySelectorAll("figure.chart")) {
  const frame = figure.getBoundingClientRect();
  const labels = figure.querySelectorAll("svg text, li > .key, li > .amount");
  // The labels shown (a chart drawn twice shows its wide or its narrow drawing).
  const shown = Array.from(labels).filter(function (label) {
    return label.getClientRects().length;
  });
  const boxes = shown.map(function (label) {
    const box = label.getBoundingClientRect();
    return [box.left, box.top, box.right, box.bottom];
  });
  result.push({frame: [frame.left, frame.top, frame.right, frame.bottom], boxes: boxes});
}
return result;
"""


def apart(one: list[float], other: list[float]) -> bool:
    return one[2] <= other[0] or other[2] <= one[0] or one[3] <= other[1] or other[3] <= one[1]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("query", ["by=day&metric=cost", "by=month&metric=cost", "by=block"])
def test_chart_labels_keep_apart_and_inside(browser, server, width, query):
    at_width(browser, width)
    browser.get(f"{server}/usage?{query}")
    charts = browser.execute_script(LABEL_BOXES)
    assert len(charts) == 3 and all(chart["boxes"] for chart in charts)
    for chart in charts:
        left, top, right, bottom = chart["frame"]
        boxes = chart["boxes"]
        for box in boxes:
            assert left - 0.5 <= box[0] and box[2] <= right + 0.5, (box, chart["frame"])
            assert top - 0.5 <= box[1] and box[3] <= bottom + 0.5, (box, chart["frame"])
        for number, box in enumerate(boxes):
            assert all(apart(box, other) for other in boxes[number + 1 :]), box


def test_a_link_to_an_entry_scrolls_to_it(browser, server, home, shots):
    at_width(browser, 1280)
    browser.get(f"{server}/session?{json_query(path=home['claude'], entry=home['target'])}"
                f"#entry-{home['target']}")  # fmt: skip
    entry = browser.find_element(By.ID, f"entry-{home['target']}")
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top", entry)
    assert 0 <= top < browser.execute_script("return window.innerHeight")
    assert browser.execute_script("return window.scrollY") > 0
    shot(browser, shots, "fragment-1280")


def test_markdown_is_rendered_and_nothing_runs(browser, server):
    at_width(browser, 1280)
    browser.get(server + "/session/sess-markdown")
    for selector in (".markdown h2", ".markdown strong", ".markdown table td",
                     ".markdown pre.code span.k", ".tool-call pre.code span",
                     ".tool-call pre.diff .del mark", ".tool-call pre.diff .add mark"):  # fmt: skip
        assert browser.find_elements(By.CSS_SELECTOR, selector), selector
    assert browser.execute_script("return window.pwned === undefined")
    for link in browser.find_elements(By.CSS_SELECTOR, "main a"):
        assert not (link.get_attribute("href") or "").startswith("javascript:")
    markup = "main script, main [onerror], main img[src^=javascript]"
    assert browser.execute_script(f"return document.querySelectorAll('{markup}').length") == 0
    assert "window.pwned = 1" in browser.find_element(By.TAG_NAME, "main").text
    # The thinking and the 60 lines of output are folded, the output's first lines shown.
    output = browser.find_element(By.CSS_SELECTOR, "details.output")
    assert output.get_attribute("open") is None and "line 1 of" in output.text
    assert "line 60 of" not in output.text
    output.find_element(By.TAG_NAME, "summary").click()
    wait_until(lambda: "line 60 of" in output.text)
    assert browser.find_element(By.CSS_SELECTOR, "details.thinking").get_attribute("open") is None
    roles = {
        element.get_attribute("class").split()[2]
        for element in browser.find_elements(By.CSS_SELECTOR, "article.entry")
    }
    assert {"role-user", "role-assistant", "role-toolResult"} <= roles
    colours = {
        browser.execute_script("return getComputedStyle(arguments[0]).backgroundColor", element)
        for element in browser.find_elements(By.CSS_SELECTOR, "article.entry")
    }
    assert len(colours) == 3


def test_times_are_the_readers(browser, server):
    browser.get(server + "/session/sess-branched")
    moment = browser.find_element(By.CSS_SELECTOR, "article.entry time.moment")
    assert "T" not in moment.text and "UTC" not in moment.text  # the script made it human
    assert moment.get_attribute("title") and moment.get_attribute("datetime")


def test_times_are_on_a_24_hour_clock_as_in_the_cli(browser, server):
    """Times in the reader's zone and language, on the CLI's 24-hour clock: no AM/PM in an
    American browser either."""
    at_width(browser, 1280)
    zone = {"timezoneId": "Pacific/Kiritimati"}  # UTC+14: an afternoon for entries at 00:0x
    for language in ("en-US", "de-DE"):
        browser.execute_cdp_cmd("Emulation.setLocaleOverride", {"locale": language})
        browser.execute_cdp_cmd("Emulation.setTimezoneOverride", zone)
        browser.get(server + "/session/sess-branched")
        shown = browser.find_elements(By.CSS_SELECTOR, "article.entry time")
        times = [t.text for t in shown if t.is_displayed()]
        assert times and all(re.search(r"\b([01]\d|2[0-3]):[0-5]\d$", t) for t in times), times
        assert not any(re.search(r"AM|PM", t) for t in times), times
        assert any(" 14:" in t for t in times), times
    browser.execute_cdp_cmd("Emulation.setLocaleOverride", {})
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})


def test_a_session_opens_at_its_start(browser, server, home):
    at_width(browser, 1280)
    with SessionIndex.open(str(home["agent_dir"]), read_only=True) as index:
        claude = index.find_session(home["claude"])
        first = index.branch(claude, claude.last_entry_id)[0].id
    browser.get(server + "/session?" + json_query(path=home["claude"]))
    entries = browser.find_elements(By.CSS_SELECTOR, "article.entry:not(.folded-entry)")
    assert entries[0].get_attribute("id") == f"entry-{first}"
    assert browser.execute_script("return window.scrollY") == 0


def test_keys_search_as_you_type_and_move(browser, server):
    at_width(browser, 1280)
    browser.get(server + "/search")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("/")
    box = browser.switch_to.active_element
    assert box.get_attribute("id") == "search-box"
    box.send_keys("plutonium")
    wait_until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "li.hit")) == 2)
    assert "/search" in browser.current_url and "plutonium" in browser.current_url
    groups = browser.find_elements(By.CSS_SELECTOR, "section.hit-group")
    assert len(groups) == 1  # both hits are of one session
    box.send_keys(Keys.ESCAPE)
    body.send_keys("j")
    assert "selected" in browser.find_elements(By.CSS_SELECTOR, "li.hit")[0].get_attribute("class")
    body.send_keys(Keys.ENTER)
    wait_until(lambda: "#entry-" in browser.current_url)
    browser.get(server + "/session/sess-branched")
    browser.find_element(By.TAG_NAME, "body").send_keys("b")
    wait_until(lambda: "selected" in browser.find_element(By.ID, "entry-a1").get_attribute("class"))


def test_the_block_page_shows_windows(browser, server):
    at_width(browser, 1280)
    browser.get(server + "/usage?by=block")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.totals tbody tr")
    assert rows and json.dumps([row.text for row in rows]).count(" gap") >= 1


def test_a_dark_system_gets_a_dark_page(browser, server, home, shots):
    at_width(browser, 1280)
    dark = [{"name": "prefers-color-scheme", "value": "dark"}]
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": dark})
    try:
        browser.get(server + "/session?" + json_query(path=home["claude"]))
        background = browser.execute_script(
            "return getComputedStyle(document.body).backgroundColor"
        )
        channels = [int(part) for part in background[background.index("(") + 1 : -1].split(",")]
        assert max(channels[:3]) < 64, background
        shot(browser, shots, "claude-dark-1280")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
