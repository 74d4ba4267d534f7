"""Code highlighted under a budget (issue 39 item 3): only with the lexers of lexers.txt and
within each one's cap there, each block in a real worker process that is stopped or killed when
it runs over, at most a page's seconds and none while other pages wait; everything else is
shown plain. The hostile inputs are the review's: ``urbiscript`` on a quote and backslashes
(exponential: 48 take days) and ``c`` on blank lines (quadratic)."""

from __future__ import annotations

import gc
import logging
import re
import threading
from html import escape, unescape
from importlib import resources

import pygments
import pytest
from pygments.lexers import find_lexer_class_by_name

pytest.importorskip("starlette")

from xcsh_store.web.highlight import (
    BLOCK_CHARACTERS,
    Budget,
    CheckedLexer,
    Highlighter,
    LexerListError,
    checked_lexers,
)
from xcsh_store.web.markup import Renderer

# A lexer that backtracks exponentially, given to a highlighter on purpose; one that does not.
EXPONENTIAL = {"urbiscript": CheckedLexer("UrbiscriptLexer", BLOCK_CHARACTERS)}
JSON = {"json": CheckedLexer("JsonLexer", BLOCK_CHARACTERS)}
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


def test_the_reviews_hostile_lexers_are_not_checked_at_their_hostile_sizes():
    lexers = checked_lexers()
    assert "urbiscript" not in lexers
    # 19,000 blank lines took ``c`` a minute; its cap is far below.
    assert lexers["c"].max_chars < 19_000


def test_every_checked_alias_names_its_lexer_in_the_installed_pygments():
    for alias, lexer in checked_lexers().items():
        assert find_lexer_class_by_name(alias).__name__ == lexer.class_name, alias
        assert 0 < lexer.max_chars <= BLOCK_CHARACTERS, alias


def test_the_list_is_well_formed():
    """Every line of lexers.txt is a comment or a lexer's class name, cap and aliases,
    tab-separated; no alias is listed twice."""
    text = resources.files("xcsh_store.web").joinpath("lexers.txt").read_text("utf-8")
    entries = [line for line in text.splitlines() if line and not line.startswith("#")]
    aliases = [alias for line in entries for alias in line.split("\t")[2].split()]
    assert entries and all(len(line.split("\t")) == 3 for line in entries)
    assert len(aliases) == len(set(aliases)) == len(checked_lexers())


def test_a_list_checked_with_another_pygments_is_refused():
    with pytest.raises(LexerListError, match=r"run python -m benchmarks\.lexer_check --write"):
        checked_lexers("# pygments 1.0\nJsonLexer\t20000\tjson\n")
    listed = checked_lexers(
        f"# pygments {pygments.__version__}\nJsonLexer\t5000\tjson json-object\n"
    )
    assert listed == dict.fromkeys(["json", "json-object"], CheckedLexer("JsonLexer", 5000))


@pytest.mark.parametrize(
    "line",
    [
        "JsonLexer json",  # the list before caps: no cap
        "JsonLexer\t\tjson",
        "JsonLexer\t0\tjson",
        f"JsonLexer\t{BLOCK_CHARACTERS + 1}\tjson",
        "JsonLexer\t-5\tjson",
        "JsonLexer\t5000\t",
        "Json Lexer\t5000\tjson",
    ],
)
def test_a_malformed_line_is_refused(line):
    with pytest.raises(LexerListError, match="line 2 is not a lexer's class name"):
        checked_lexers(f"# pygments {pygments.__version__}\n{line}\n")


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


def test_a_block_beyond_its_lexers_cap_is_plain(highlighter):
    found = highlighter({"json": CheckedLexer("JsonLexer", 100)}, block_seconds=GENEROUS)
    at_cap = "[" + "1," * 48 + "10]"
    assert len(at_cap) == 100
    assert found.highlight(at_cap, "json", Budget()) is not None
    assert found.highlight(at_cap + " ", "json", Budget()) is None


# What sessions are mostly made of: a line of each language and a token its lexer marks.
COMMON = {
    "python": ("def total(items):\n    return sum(item.price for item in items)\n", "k", "def"),
    "javascript": ("const total = (xs) => xs.reduce((s, x) => s + x.price, 0);\n", "kd", "const"),
    "typescript": ("function total(items: Item[]): number {\n  return items.length;\n}\n", "kd",
                   "function"),
    "c": ('#include <stdio.h>\nint main(void) {\n  printf("hi\\n");\n  return 0;\n}\n', "k",
          "return"),
    "go": ('package main\n\nfunc main() {\n\tfmt.Println("hi")\n}\n', "kd", "func"),
    "java": ('class Hi {\n  public static void main(String[] args) {\n    System.out.println("hi");'
             "\n  }\n}\n", "kd", "class"),
    "csharp": ('class Hi {\n  static void Main() {\n    Console.WriteLine("hi");\n  }\n}\n', "k",
               "class"),
    "css": ("body {\n  margin: 0;\n  color: #333;\n}\n", "k", "margin"),
    "bash": ('for f in *.txt; do\n  echo "$f"\ndone\n', "k", "for"),
    "json": ('{"name": "xcsh", "ok": true}\n', "kc", "true"),
    "yaml": ("name: xcsh\nitems:\n  - one\n", "nt", "name"),
    "rust": ('fn main() {\n    let x = 1;\n    println!("{x}");\n}\n', "k", "fn"),
    "html": ('<div class="a"><p>hi</p></div>\n', "nt", "div"),
    "sql": ("SELECT id, name FROM sessions WHERE id = 1;\n", "k", "SELECT"),
    "diff": ("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-old\n+new\n", "gi", "+new"),
    "markdown": ("# Title\n\nSome *text* and `code`.\n", "gh", "# Title"),
}  # fmt: skip
# Shapes that make the common lexers backtrack (benchmarks/lexer_check.py): ``c`` on a quote and
# blank lines, ``javascript`` on escaped quotes, ``python`` on blank lines of a space.
HOSTILE = ('"' + "\n" * 20_000, '\\"' * 10_000, " \n" * 10_000)


def repeated(code: str, characters: int) -> str:
    """``code`` again and again, cut to ``characters``."""
    return (code * (characters // len(code) + 1))[:characters]


def shown(html: str) -> str:
    """The text a page shows for a block's HTML (its spans taken off)."""
    return unescape(re.sub(r"</?span[^>]*>", "", html))


@pytest.mark.parametrize("alias", COMMON)
def test_a_common_language_is_highlighted_at_ordinary_sizes(highlighter, alias):
    code, token_class, token = COMMON[alias]
    found = highlighter(block_seconds=GENEROUS)
    for size in (len(code), 1_000):
        html = found.highlight(repeated(code, size), alias, Budget(GENEROUS))
        assert html is not None, (alias, size)
        assert f'<span class="{token_class}">{escape(token)}</span>' in html


@pytest.mark.parametrize("alias", COMMON)
def test_a_common_language_is_highlighted_up_to_its_cap_and_plain_past_it(highlighter, alias):
    found = highlighter(block_seconds=GENEROUS)
    cap = found.lexers[alias].max_chars
    code = repeated(COMMON[alias][0], cap + 1)
    at_cap = found.highlight(code[:cap], alias, Budget(GENEROUS))
    assert at_cap is not None and shown(at_cap).rstrip("\n") == code[:cap].rstrip("\n")
    assert found.highlight(code, alias, Budget(GENEROUS)) is None


@pytest.mark.parametrize("alias", COMMON)
def test_hostile_code_at_its_lexers_cap_is_shown_whole(highlighter, alias):
    """At its cap, a hostile block is highlighted in its second or shown plain: either way
    the page shows it whole."""
    renderer = Renderer(highlighter())
    cap = renderer.highlighter.lexers[alias].max_chars
    for hostile in HOSTILE:
        code = hostile[:cap]
        html = renderer.markdown(f"```{alias}\n{code}\n```\n", Budget())
        inside = re.fullmatch(r'<pre class="code"><code>(.*)</code></pre>\n', html, re.DOTALL)
        assert inside is not None and shown(inside[1]).rstrip("\n") == code.rstrip("\n"), alias
