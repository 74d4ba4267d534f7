"""The web app in a real headless Chromium (Debian's chromium and chromedriver, driven by
Selenium), against ``xcsh-store serve --watch`` run as a process: the sessions list, search,
opening a hit, a folded branch expanded, the leaf switched, a context, the usage charts, a live
update, a hostile session that runs nothing, and a site rebound to 127.0.0.1 that reads
nothing. Each step takes a screenshot (into the test's temp dir) that must not be blank.

One browser for the module. Without chromium the tests skip with the reason, except under CI
(CI=true), where a missing browser is a failure."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import REBOUND, distinct_bytes, headless_chromium, wait_until
from session_builder import append, flux_records, header, message, sessions_dir, write_session
from web_server import running_server

from xcsh_store.index import SessionIndex

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import (  # noqa: E402
    NoAlertPresentException,
)
from selenium.webdriver.common.by import By  # noqa: E402

HOSTILE = (
    '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
    '<a href="javascript:window.pwned = 3">click</a>'
    '<svg onload="window.pwned = 4"><script>window.pwned = 5</script></svg>'
)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    agent_dir = tmp_path_factory.mktemp("browser") / "agent"
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "branched.jsonl",
        [*flux_records(), message("a3", "u3", "assistant", "the clock tower at 10:04")],
    )
    write_session(
        folder / "hostile.jsonl",
        [header("sess-hostile", title=HOSTILE), message("u1", None, "user", HOSTILE)],
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


@pytest.fixture(scope="module")
def server(agent: Path) -> Iterator[str]:
    with running_server(agent, "--watch") as running:
        assert running.process.stdout is not None
        # The watcher's first sync, after which no event is due unless a file changes.
        assert json.loads(running.process.stdout.readline())["reason"] == "start"
        yield str(running.printed["url"]).rstrip("/")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from headless_chromium()


@pytest.fixture
def shot(browser: Any, tmp_path: Path) -> Callable[[str], None]:
    def take(name: str) -> None:
        path = tmp_path / f"{name}.png"
        assert browser.save_screenshot(str(path))
        assert distinct_bytes(path.read_bytes()) > 16, f"{name}: the screenshot is blank"

    return take


def shown_entries(browser: Any) -> list[str]:
    return [
        element.get_attribute("id")
        for element in browser.find_elements(By.CSS_SELECTOR, "article.entry:not(.folded-entry)")
    ]


def test_list_search_and_open_a_hit(browser, server, shot):
    browser.get(server + "/")
    assert "Flux capacitor" in browser.find_element(By.TAG_NAME, "main").text
    shot("list")
    box = browser.find_element(By.CSS_SELECTOR, "form.quick input[name=q]")
    box.send_keys("plutonium\n")
    wait_until(lambda: "/search" in browser.current_url)
    hits = browser.find_elements(By.CSS_SELECTOR, "li.hit")
    assert len(hits) == 2 and browser.find_elements(By.CSS_SELECTOR, ".snippet mark")
    shot("search")
    hits[0].find_element(By.CSS_SELECTOR, "a.hit-link").click()
    wait_until(lambda: "#entry-" in browser.current_url)
    target = browser.current_url.split("#")[1]
    assert browser.find_element(By.ID, target).is_displayed()
    # The hit lies on an abandoned branch: the page shows that branch.
    assert shown_entries(browser) == ["entry-u1", "entry-a1", "entry-u2", "entry-a2"]
    shot("hit")


def test_expand_a_folded_branch_switch_the_leaf_and_view_the_context(browser, server, shot):
    browser.get(server + "/session/sess-branched")
    assert shown_entries(browser) == ["entry-u1", "entry-a1", "entry-u3", "entry-a3"]
    folded = browser.find_element(By.CSS_SELECTOR, "details.folded")
    hidden = folded.find_element(By.CSS_SELECTOR, "article.folded-entry")
    assert not hidden.is_displayed()
    folded.find_element(By.TAG_NAME, "summary").click()
    wait_until(hidden.is_displayed)
    assert "abandoned idea about plutonium" in hidden.text
    shot("expanded")
    folded.find_element(By.CSS_SELECTOR, "a.switch-leaf").click()
    wait_until(lambda: "leaf=a2" in browser.current_url)
    assert shown_entries(browser) == ["entry-u1", "entry-a1", "entry-u2", "entry-a2"]
    shot("switched")
    browser.find_element(By.CSS_SELECTOR, "p.muted a.context-link").click()
    wait_until(lambda: "/context" in browser.current_url)
    messages = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "li.message pre")]
    assert messages[-1] == "plutonium is hard to get" and len(messages) == 4
    shot("context")


def test_the_usage_charts(browser, server, shot):
    browser.get(server + "/usage")
    columns = browser.find_elements(By.CSS_SELECTOR, "figure.chart svg.wide rect")
    assert len(columns) == 1 and columns[0].size["height"] > 0  # one day
    bars = browser.find_elements(By.CSS_SELECTOR, "figure.chart-ranked meter")
    assert len(bars) == 2 and all(bar.size["width"] > 0 for bar in bars)  # a model, a project
    assert "total" in browser.find_element(By.CSS_SELECTOR, "table.totals tfoot").text
    shot("usage")


def test_a_hostile_session_runs_nothing(browser, server, shot):
    for path in ("/", "/session/sess-hostile", "/search?q=pwned"):
        browser.get(server + path)
        for link in browser.find_elements(By.CSS_SELECTOR, "main a"):
            assert not (link.get_attribute("href") or "").startswith("javascript:")
        assert browser.execute_script("return window.pwned === undefined")
        with pytest.raises(NoAlertPresentException):
            _ = browser.switch_to.alert.text
        markup = "main script, main svg, main [onerror], main [onload]"
        assert browser.execute_script(f"return document.querySelectorAll('{markup}').length") == 0
    assert "window.pwned = 1" in browser.find_element(By.TAG_NAME, "main").text  # shown as text
    shot("hostile")


def test_an_open_page_updates_when_the_session_grows(browser, server, agent, shot):
    browser.get(server + "/session/sess-branched")
    append(
        agent / "sessions" / "--work-demo--" / "branched.jsonl",
        message("u4", "a3", "user", "great scott, a new message"),
    )
    # The page reloads by itself; a second sync event may reload it once more.
    wait_until(lambda: shown_entries(browser)[-1:] == ["entry-u4"])
    wait_until(lambda: "great scott" in browser.find_element(By.ID, "entry-u4").text)
    shot("live")


def test_a_site_rebound_to_loopback_reads_nothing(browser, server, shot):
    port = server.rsplit(":", 1)[1]
    for path in ("/", "/session/sess-branched", "/search?q=plutonium"):
        browser.get(f"http://{REBOUND}:{port}{path}")
        text = browser.find_element(By.TAG_NAME, "body").text
        assert "does not answer to that host name" in text
        assert "Flux" not in text and "plutonium" not in text
    shot("rebound")
