"""The web app of ``xcsh-store serve`` through Starlette's test client, over real session files
and a real index: what each page shows, that session content never becomes markup, the token,
and that a session of 50,000 entries is shown a window at a time."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from markupsafe import escape
from real_home import SNATCH_PARENT, SNATCH_SUBAGENT
from session_builder import (
    append,
    flux_records,
    header,
    index_other_agents_file,
    message,
    random_tree_session,
    sessions_dir,
    write_session,
)
from web_server import LOCAL

from xcsh_store.artifacts.store import ArtifactManager
from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from xcsh_store.web import CONTENT_SECURITY_POLICY, create_app
from xcsh_store.web.pages import WINDOW, branch_of

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
HOSTILE = '<script>alert("pwned")</script><img src=x onerror="alert(1)">'
SVG = '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(2)"><script>alert(3)</script></svg>'


def entry(entry_id: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {"id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:09.000Z"} | fields


@pytest.fixture
def branched(agent_dir: Path) -> Path:
    """u1 -> a1 -> (u2 abandoned -> a2) | (u3 -> c1 compaction -> a3 leaf), a label on a1, an
    image from the blob store and an artifact link."""
    path = sessions_dir(agent_dir) / "branched.jsonl"
    ref = BlobStore(str(agent_dir / "blobs")).put(PNG).ref
    artifact = ArtifactManager(str(path)).save("artifact body text", "bash")
    compaction = entry(
        "c1", "u3", type="compaction", summary="we chose lightning", firstKeptEntryId="u3"
    )
    image = message("a3", "c1", "assistant", f"the answer, see artifact://{artifact}")
    image["message"]["content"].append({"type": "image", "data": ref, "mimeType": "image/png"})
    label = entry("l1", "a3", type="label", targetId="a1", label="decision")
    write_session(path, [*flux_records(), compaction, image, label])
    index_all(agent_dir)
    return path


def index_all(agent_dir: Path) -> None:
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()


def entry_ids(html: str, folded: bool = False) -> list[str]:
    """The ids of the entries shown on the branch (or, ``folded``, in folded branches)."""
    found = re.findall(r'<article class="entry ([^"]*)" id="entry-([^"]+)"', html)
    return [entry_id for classes, entry_id in found if ("folded-entry" in classes) == folded]


def test_the_session_page_shows_the_active_branch_and_folds_the_abandoned_one(client, branched):
    html = client.get("/session/sess-branched").text
    assert entry_ids(html) == ["u1", "a1", "u3", "c1", "a3", "l1"]
    assert "Branch point: 2 branches continue here; 1 folded." in html
    assert entry_ids(html, folded=True) == ["u2", "a2"]
    assert re.search(
        r'class="switch-leaf" href="/session\?path=[^"]+&amp;leaf=a2&amp;entry=u2#entry-u2"', html
    )
    assert '<span class="label">decision</span>' in html
    assert "we chose lightning" in html  # the compaction's summary


def test_switching_the_leaf_shows_the_other_branch(client, branched):
    html = client.get("/session/sess-branched?leaf=a2").text
    assert entry_ids(html) == ["u1", "a1", "u2", "a2"]


def test_a_search_hit_links_to_its_entry_on_its_branch(client, branched):
    html = client.get("/search?q=plutonium").text
    links = re.findall(r'class="hit-link" href="([^"]+)"', html)
    assert len(links) == 2 and all(link.endswith(("#entry-u2", "#entry-a2")) for link in links)
    assert "<mark>plutonium</mark>" in html
    target = client.get(links[0].replace("&amp;", "&").split("#")[0]).text
    assert entry_ids(target) == ["u1", "a1", "u2", "a2"]


def test_images_come_from_the_blob_store_and_artifact_links_resolve(client, branched):
    html = client.get("/session/sess-branched").text
    image = re.search(r'<img class="image" src="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert client.get(image).content == PNG
    assert client.get(image.replace("image/png", "image/svg%2Bxml")).status_code == 404
    link = re.search(r'class="resource" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert client.get(link).text == "artifact body text"


def test_the_context_view_shows_what_the_model_saw(client, branched):
    page = client.get("/session/sess-branched").text
    # The folded branch's entries link to their contexts too.
    link = re.search(r'class="context-link" href="([^"]+leaf=a2)"', page).group(1)
    html = client.get(link.replace("&amp;", "&")).text
    assert "plutonium is hard to get" in html and "lightning" not in html


def test_the_list_filters_sorts_and_pages(agent_dir, client):
    for number in range(60):
        folder = "alpha" if number % 2 else "beta"
        write_session(
            agent_dir / "sessions" / f"--{folder}--" / f"s{number:02d}.jsonl",
            [header(f"s{number:02d}", title=f"title {number:02d}", cwd=f"/work/{folder}"),
             message("u1", None, "user", "hi")],
        )  # fmt: skip
    index_all(agent_dir)
    titles = re.findall(r'class="session-link" href="[^"]+">([^<]+)<', client.get("/").text)
    assert len(titles) == 50
    second = client.get("/?page=2").text
    assert len(re.findall('class="session-link"', second)) == 10 and "page 2 of 2" in second
    ordered = client.get("/?sort=title&dir=asc&project=/work/alpha").text
    titles = re.findall(r'class="session-link" href="[^"]+">([^<]+)<', ordered)
    assert titles == [f"title {number:02d}" for number in range(1, 60, 2)]


def test_the_usage_chart_is_a_time_axis_where_idle_days_are_empty(agent_dir, client):
    """Usage on Jan 1, Mar 1 and Mar 2: by day, the chart spans the 61 days between, the 58
    idle days empty slots; by month, February is an empty slot between two columns."""
    days = ("2026-01-01", "2026-03-01", "2026-03-02")
    records, parent = [header("sess-gap")], None
    for number, day in enumerate(days):
        for role in ("user", "assistant"):
            entry_id = f"{role[0]}{number}"
            records.append(
                message(entry_id, parent, role, "hi") | {"timestamp": f"{day}T12:00:00Z"}
            )
            parent = entry_id
    write_session(sessions_dir(agent_dir) / "gap.jsonl", records)
    index_all(agent_dir)

    def columns(by: str) -> list[float]:
        page = client.get(f"/usage?by={by}").text
        wide = page.split('<svg class="wide"', 1)[1].split("</svg>", 1)[0]
        return [float(x) for x in re.findall(r'<rect class="[^"]*" x="([\d.]+)"', wide)]

    jan, mar1, mar2 = columns("day")
    slot = mar2 - mar1
    assert (mar1 - jan) / slot == pytest.approx(59, rel=0.01)  # Jan 1 to Mar 1 (x to 0.1 px)
    assert mar2 + slot == pytest.approx(760 + 1, abs=0.2)  # the axis ends at the last day
    jan, mar = columns("month")
    assert (mar - jan) / 2 == pytest.approx(760 / 3, abs=0.1)  # three slots, February empty


def test_usage_draws_its_charts_and_the_totals(client, branched):
    html = client.get("/usage?by=month").text
    # One month, drawn wide and narrow (the page shows one of them by its width).
    assert html.count("<svg ") == 2 and html.count("<rect ") == 2
    assert html.count("<meter ") == 2  # one model, one project, ranked
    assert "<th>total</th>" in html and "$0.90" in html  # three assistant messages of $0.30


def handler_attributes(page: str) -> list[str]:
    """The event-handler attributes (``on…``) of the page's tags."""
    found: list[str] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.extend(f"{tag} {name}" for name, _value in attrs if name.startswith("on"))

    Parser().feed(page)
    return found


def test_hostile_session_content_never_becomes_markup(agent_dir, client):
    path = write_session(
        sessions_dir(agent_dir) / "hostile.jsonl",
        [
            header("sess-hostile", title=HOSTILE),
            message("u1", None, "user", f"{HOSTILE} [click](javascript:alert(4)) {SVG}"),
            {**message("a1", "u1", "assistant", "image"), "message": {"role": "assistant",
             "content": [{"type": "image", "mimeType": "image/svg+xml",
                          "data": base64.b64encode(SVG.encode()).decode()}]}},
            entry("l1", "a1", type="label", targetId="u1", label=HOSTILE),
        ],
    )  # fmt: skip
    index_all(agent_dir)
    for url in ("/", "/session/sess-hostile", "/search?q=pwned", "/context?path=" + str(path)):
        response = client.get(url)
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        html = response.text
        assert "<script>" not in html and "<svg" not in html, url
        # No tag has an event handler (a text or a title may say onerror=: it is text).
        assert not handler_attributes(html), url
        assert 'href="javascript:' not in html and "data:image/svg" not in html, url
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in client.get("/").text
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY


def test_a_session_of_50000_entries_is_shown_a_window_at_a_time(agent_dir, client):
    path = write_session(sessions_dir(agent_dir) / "long.jsonl", [header("sess-long")])
    lines, parent = [], None
    for number in range(50_000):
        lines.append(message(f"e{number:05d}", parent, "user", f"line {number}"))
        parent = f"e{number:05d}"
    append(path, *lines)
    index_all(agent_dir)
    # A session opens at its start; the "newest" link opens the window of its last entry.
    opened = client.get("/session/sess-long").text
    assert "Entries 1–100 of 50,000 on this branch" in opened
    assert entry_ids(opened) == [f"e{number:05d}" for number in range(WINDOW)]
    newest = re.search(r'class="newest" href="([^"]+)"', opened)
    assert newest is not None
    last = client.get(unescape(newest.group(1))).text
    assert entry_ids(last) == [f"e{number:05d}" for number in range(50_000 - WINDOW, 50_000)]
    assert 'class="newest"' not in last
    hit = client.get("/session/sess-long?entry=e01234").text
    first = 1234 - 1234 % WINDOW
    assert entry_ids(hit) == [f"e{number:05d}" for number in range(first, first + WINDOW)]


def test_with_a_token_every_request_needs_it(agent_dir, branched):
    client = TestClient(
        create_app(str(agent_dir), token="s3cret"), base_url=LOCAL, follow_redirects=False
    )
    assert client.get("/").status_code == 401
    assert client.get("/static/app.css").status_code == 401
    assert client.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200
    first = client.get("/session/sess-branched?token=s3cret")
    assert first.status_code == 303 and "token" not in first.headers["location"]
    assert client.get("/session/sess-branched").status_code == 200  # the cookie it set


def test_serve_refuses_a_public_address_without_a_token(agent_dir, branched):
    result = subprocess.run(
        [sys.executable, "-m", "xcsh_store", "--agent-dir", str(agent_dir), "serve",
         "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "--token" in result.stderr


def test_every_page_is_served_on_paths_of_its_own():
    """The app serves every module of web/views/ as found: two pages on one path would leave
    the second one unreachable, with nothing to say so."""
    from xcsh_store.web.views import routes

    paths = [path for path, _page in routes()]
    assert "/session/{session}" in paths
    assert len(paths) == len(set(paths))


@pytest.mark.parametrize("seed", range(5))
def test_the_branch_walked_up_the_tree_is_the_index_branch(agent_dir, seed):
    path = random_tree_session(sessions_dir(agent_dir) / f"tree{seed}.jsonl", seed, size=120)
    index_all(agent_dir)
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        tree = index.tree(str(path))
        for leaf in tree.leaves:
            assert branch_of(tree, leaf) == index.branch(str(path), leaf)


def test_a_claude_code_session_is_shown_as_entries_of_the_xcsh_model(agent_dir, client, tmp_path):
    # The fixture's second line is the isCompactSummary user line after a compact_boundary:
    # the page shows it as the compaction it is, with its summary text.
    fixture = index_other_agents_file(
        agent_dir, tmp_path / "claude", "claude", "robcmills__cc.nvim__compact_boundary.jsonl"
    )
    html = client.get("/session", params={"path": str(fixture)}).text
    assert "continued from a previous conversation" in html
    assert re.search(r'<article class="entry [^"]*" id="entry-86f56821', html)


def test_the_list_and_the_search_filter_by_agent_and_mark_estimated_costs(
    agent_dir, client, branched, tmp_path
):
    fixture = index_other_agents_file(
        agent_dir,
        tmp_path / "claude",
        "claude",
        "thejamesnick__agentic-wallet__claude-session.jsonl",
    )
    listed = client.get("/", params={"agent": "claude"}).text
    assert fixture.stem in listed and "sess-branched" not in listed
    # Its one model is an OpenRouter :free one: free, $0 (an unpriced model shows "?", one
    # without usage "–": tests/test_cost_kinds.py).
    assert re.search(r'<td class="number"><span title="free">\$0</span></td>', listed)
    assert "sess-branched" in client.get("/", params={"agent": "xcsh"}).text
    found = client.get("/search", params={"q": "Superteam", "agent": "xcsh"}).text
    assert fixture.stem not in found
    assert fixture.stem in client.get("/search", params={"q": "Superteam", "agent": "claude"}).text


def test_a_subagent_and_its_session_link_to_each_other(agent_dir, real_home, client):
    index_all(agent_dir)
    parent, subagent = (real_home.files[name] for name in (SNATCH_PARENT, SNATCH_SUBAGENT))
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        paths = [index.find_session(str(path)).path for path in (parent, subagent)]
    link = {path: escape("/session?" + urlencode({"path": path})) for path in paths}
    parent_page, subagent_page = (client.get(link[path].unescape()).text for path in paths)
    assert f'class="subagent" href="{link[paths[1]]}"' in parent_page
    assert f'class="parent-session" href="{link[paths[0]]}"' in subagent_page


def test_a_session_header_says_what_it_cost_and_used(agent_dir, real_home, client):
    index_all(agent_dir)
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        session = index.find_session(str(real_home.files[SNATCH_PARENT]))
        path, tokens = session.path, session.input_tokens
    page = client.get("/session?" + urlencode({"path": path})).text
    facts = page.split('<dl class="session-facts">')[1].split("</dl>")[0]
    for fact in ("agent", "model", "project", "duration", "tokens", "cost"):
        assert f"<dt>{fact}" in facts, fact
    assert "claude-opus-4-20250514" in facts
    assert f"in {tokens}" in facts and '<span title="estimated">~$' in facts


def test_model_rows_drop_the_provider_where_the_names_stay_apart():
    from xcsh_store.web.pages import model_labels

    keys = ["anthropic/claude-opus-4-6", "openai/gpt-5.4", "bedrock/claude-opus-4-6", "local"]
    assert model_labels(keys) == [
        "anthropic/claude-opus-4-6",
        "gpt-5.4",
        "bedrock/claude-opus-4-6",
        "local",
    ]


def test_the_usage_page_names_models_without_their_provider(client, branched):
    page = client.get("/usage", params={"by": "day"}).text
    chart = page.split("by model (max", 1)[1].split("</ol>", 1)[0]
    models = re.findall(r'<span class="key" title="([^"]*)">([^<]*)</span>', chart)
    assert models and all("/" in key for key, _ in models)
    assert all(label == key.split("/", 1)[1] for key, label in models)
