"""What a session's text can make a real headless Chromium ask of ``xcsh-store serve``, and
what two servers' tokens do in one browser (issue 39 item 10):

* markdown images load only the server's own images (``/blob/…``, ``/image?…``): an image
  naming ``/live`` (a stream that never ends) or ``/search`` (a search on every view) is not
  requested;
* two servers on two ports, each with its own token, both stay open in one browser: each
  keeps its token in a cookie of its own (a cookie is not scoped to a port)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import headless_chromium, wait_until
from session_builder import header, message, sessions_dir, write_session
from web_server import running_server

from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex

pytest.importorskip("selenium.webdriver")

from selenium.webdriver.common.by import By

# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f80f0000010101005b6e0d8b0000000049454e44ae426082"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from headless_chromium()


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A session whose markdown names images of every route, one of them a real blob's."""
    agent_dir = tmp_path_factory.mktemp("requests") / "agent"
    blob = BlobStore(str(agent_dir / "blobs")).put(PNG).hash
    own = f"/blob/{blob}?type=image/png"
    text = (
        f"![live](/live) ![search](/search?q=secret) ![usage](/usage) ![page](/session/x)"
        f" ![static](/static/app.js) ![own]({own}) ![up](../live) ![rel](live)"
    )
    write_session(
        sessions_dir(agent_dir) / "images.jsonl",
        [header("sess-images"), message("u1", None, "user", text)],
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir, own


def image_requests(browser: Any) -> list[str]:
    """The paths (and queries) of every image the page loaded or tried to."""
    return browser.execute_script(
        "return performance.getEntriesByType('resource')"
        ".filter(e => e.initiatorType === 'img')"
        ".map(e => { const u = new URL(e.name); return u.pathname + u.search; })"
    )


def test_markdown_images_load_only_the_servers_images(browser, agent):
    agent_dir, own = agent
    with running_server(agent_dir) as server:
        browser.get(f"http://{server.host}/session/sess-images")
        wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "main img"))
        wait_until(lambda: image_requests(browser))
        assert image_requests(browser) == [own]
        sources = [
            image.get_attribute("src") or ""
            for image in browser.find_elements(By.CSS_SELECTOR, "main img")
        ]
        assert [source for source in sources if source] == [f"http://{server.host}{own}"]


def test_two_servers_with_their_own_tokens_stay_open_in_one_browser(browser, agent):
    agent_dir, _own = agent
    with (
        running_server(agent_dir, "--token", "token-of-the-first") as first,
        running_server(agent_dir, "--token", "token-of-the-second") as second,
    ):
        browser.get(str(first.printed["url"]))
        assert "sess-images" in browser.page_source
        browser.get(str(second.printed["url"]))
        assert "sess-images" in browser.page_source
        # Without ?token= now: each answers from its own cookie.
        for server in (first, second):
            browser.get(f"http://{server.host}/")
            assert "A token is needed" not in browser.page_source, server.host
            assert "sess-images" in browser.page_source
