"""Code highlighted under a budget (issue 39 item 3): only with the lexers of lexers.txt, each
block in a real worker process that is stopped or killed when it runs over, at most a page's
seconds and none while other pages wait; everything else is shown plain. The hostile inputs are
the review's: ``urbiscript`` on a quote and backslashes (exponential: 48 take days) and ``c``
on blank lines (quadratic)."""

from __future__ import annotations

import gc
import logging
import threading

import pygments
import pytest
from pygments.lexers import find_lexer_class_by_name

pytest.importorskip("starlette")

from xcsh_store.web.highlight import (
    Budget,
    Highlighter,
    LexerListError,
    checked_lexers,
)
from xcsh_store.web.markup import Renderer

# A lexer that backtracks exponentially, given to a highlighter on purpose; one that does not.
EXPONENTIAL = {"urbiscript": "UrbiscriptLexer"}
JSON = {"json": "JsonLexer"}
HANGS = '"' + "\\" * 48
# Seconds a block is given where the test needs it highlighted: whatever the machine's load,
# a few lines take far less.
GENEROUS = 120.0


@pytest.fixture
def highlighter():
    made: list[Highlighter] = []

    def make(lexers=None, **options) -> Highlighter:
        made.append(Highlighter(lexers, **options))
        return made[-1]

    yield make
    for one in made:
        one.close()


def test_the_reviews_hostile_lexers_are_not_checked():
    lexers = checked_lexers()
    assert not {"urbiscript", "c", "python", "cpp"} & set(lexers)


def test_every_checked_alias_names_its_lexer_in_the_installed_pygments():
    for alias, class_name in checked_lexers().items():
        assert find_lexer_class_by_name(alias).__name__ == class_name, alias


def test_a_list_checked_with_another_pygments_is_refused():
    with pytest.raises(LexerListError, match=r"run python -m benchmarks\.lexer_check --write"):
        checked_lexers("# pygments 1.0\nJsonLexer json\n")
    listed = checked_lexers(f"# pygments {pygments.__version__}\nJsonLexer json json-object\n")
    assert listed == {"json": "JsonLexer", "json-object": "JsonLexer"}


def test_a_checked_lexer_highlights(highlighter):
    html = highlighter(JSON, block_seconds=GENEROUS).highlight('{"a": [1, true]}', "json", Budget())
    assert html is not None and '<span class="kc">true</span>' in html


def test_a_lexer_not_checked_is_plain_whatever_the_fence_says(highlighter):
    found = highlighter(JSON, block_seconds=GENEROUS)
    assert found.highlight("int main() {}", "c", Budget()) is None
    assert found.highlight(HANGS, "urbiscript", Budget()) is None


def test_a_block_too_long_is_plain(highlighter):
    found = highlighter(JSON, block_seconds=GENEROUS, block_characters=100)
    assert found.highlight("[" + "1," * 100 + "1]", "json", Budget()) is None


def test_a_block_that_runs_over_is_plain_and_remembered(highlighter, caplog):
    found = highlighter(EXPONENTIAL, block_seconds=0.5)
    with caplog.at_level(logging.WARNING, "xcsh_store"):
        assert found.highlight(HANGS, "urbiscript", Budget()) is None
        assert found.highlight(HANGS, "urbiscript", Budget()) is None
    # The second time, no worker was given it: it was known to run over.
    assert [record.message for record in caplog.records].count(
        "serve: a urbiscript block of 49 characters ran over its time: shown plain"
    ) == 1


def test_after_a_block_ran_over_the_next_is_highlighted(highlighter):
    found = highlighter(EXPONENTIAL | JSON, block_seconds=0.5)
    assert found.highlight(HANGS, "urbiscript", Budget()) is None
    found.block_seconds = GENEROUS
    assert found.highlight("[1]", "json", Budget()) is not None


def test_no_highlighting_while_other_pages_wait(highlighter):
    budget = Budget(crowded=lambda: True)
    assert highlighter(JSON, block_seconds=GENEROUS).highlight("[1]", "json", budget) is None
    assert budget.short


def test_a_page_past_its_seconds_shows_the_rest_plain(highlighter):
    budget = Budget(seconds=0)
    assert highlighter(JSON, block_seconds=GENEROUS).highlight("[1]", "json", budget) is None
    assert budget.short


def test_closing_stops_a_block_under_way_and_its_worker(highlighter):
    found = highlighter(EXPONENTIAL, block_seconds=3600)
    answers: list[str | None] = []
    asking = threading.Thread(
        target=lambda: answers.append(found.highlight(HANGS, "urbiscript", Budget(3600)))
    )
    asking.start()
    while not found._all:  # the worker is started by the call
        asking.join(0.05)
    (worker,) = found._all
    found.close()
    asking.join()
    assert answers == [None]
    assert worker.process.poll() is not None


def test_markdown_cut_short_by_its_budget_is_not_kept(highlighter):
    renderer = Renderer(highlighter(JSON, block_seconds=GENEROUS))
    text = "```json\n[1, true]\n```\n"
    assert 'class="kc"' not in renderer.markdown(text, Budget(seconds=0))
    assert 'class="kc"' in renderer.markdown(text, Budget())


def test_a_highlighter_that_is_gone_ends_its_workers():
    found = Highlighter(JSON, block_seconds=GENEROUS)
    assert found.highlight("[1]", "json", Budget()) is not None
    (worker,) = found._all
    del found
    gc.collect()
    assert worker.process.poll() is not None
