"""Session text as HTML a page can hold: markdown rendered by markdown-it-py (CommonMark, raw
HTML off), its output cleaned by nh3 (Ammonia: an allow-list of tags, attributes and URL
schemes), code highlighted by Pygments with CSS classes (the page's policy allows no inline
style) within the page's budget (highlight.py: what is not highlighted in time is plain).
Whatever a session says, what comes out runs nothing: a ``<script>`` is text, ``onerror=`` is
dropped, a ``javascript:`` link loses its href."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from contextvars import ContextVar

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from pygments.formatters import HtmlFormatter

from xcsh_store.format.tool_calls import marked_lines
from xcsh_store.web.highlight import Budget, Highlighter

# The class every highlighted block carries; code_css() styles the tokens under it.
CODE_CLASS = "code"
# Texts rendered lately, kept: a page reloaded after a sync shows mostly the same entries
# (at most ENTRY_SHOWN characters each: a few MB in all).
RENDERED_KEPT = 256

_TAGS = {
    "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "span", "div", "blockquote",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody",
    "tr", "th", "td", "img",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "pre": {"class"},
    "th": {"align"},
    "td": {"align"},
}
# Links to the web and mail only.
_SCHEMES = {"http", "https", "mailto"}
# Images only of this server's image routes (pages.py links them so): never another site's
# (the policy would block it anyway), and never another page of this server, which the browser
# would request with every view of the page (/live never ends, /search searches).
_OWN_IMAGE = re.compile(r"/blob/[0-9a-f]{64}\?type=image/[a-z0-9.+-]+|/image\?[^#\s]*")


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if tag == "img" and attribute == "src" and not _OWN_IMAGE.fullmatch(value):
        return None
    return value


def clean(html: str) -> Markup:
    """``html`` with only the allowed tags, attributes and URL schemes left."""
    return Markup(
        nh3.clean(
            html,
            tags=_TAGS,
            attributes=_ATTRIBUTES,
            url_schemes=_SCHEMES,
            link_rel="noopener noreferrer nofollow",
            attribute_filter=_attribute_filter,
        )
    )


class Renderer:
    """Markdown and code as clean HTML, the code highlighted by ``highlighter`` within the
    ``Budget`` of the page being made."""

    def __init__(self, highlighter: Highlighter) -> None:
        self.highlighter = highlighter
        self._parser = MarkdownIt("commonmark", {"html": False, "highlight": self._fence})
        self._parser.enable(["table", "strikethrough"])
        # The budget of the page whose markdown is being rendered (the fence callback of
        # markdown-it-py takes no argument of ours); each worker thread has its own.
        self._budget: ContextVar[Budget] = ContextVar("budget")
        self._rendered: OrderedDict[str, Markup] = OrderedDict()
        self._lock = threading.Lock()

    def code(self, code: str, language: str, budget: Budget) -> Markup:
        """``code`` as the inside of a ``<pre>``: its tokens in spans of Pygments' classes
        when ``language`` names a checked lexer and the budget allows; escaped text
        otherwise."""
        html = self.highlighter.highlight(code, language, budget) if language else None
        if html is None:
            return escape(code)
        # Pygments adds a newline a block did not have.
        return Markup(html[:-1] if html.endswith("\n") and not code.endswith("\n") else html)

    def markdown(self, text: str, budget: Budget) -> Markup:
        """``text`` read as CommonMark (tables, strike-through), as clean HTML; kept for the
        next page unless a block of it was shown plain for want of budget."""
        with self._lock:
            if text in self._rendered:
                self._rendered.move_to_end(text)
                return self._rendered[text]
        short_before, budget.short = budget.short, False
        token = self._budget.set(budget)
        try:
            html = clean(self._parser.render(text))
        finally:
            self._budget.reset(token)
        if not budget.short:
            with self._lock:
                self._rendered[text] = html
                while len(self._rendered) > RENDERED_KEPT:
                    self._rendered.popitem(last=False)
        budget.short = budget.short or short_before
        return html

    def _fence(self, code: str, language: str, _attributes: str) -> str:
        inside = self.code(code, language, self._budget.get())
        return f'<pre class="{CODE_CLASS}"><code>{inside}</code></pre>'


def code_css() -> str:
    """The token colours of highlighted code, light and dark (the page follows the system)."""

    def rules(style: str) -> list[str]:
        # The token rules only (not the styles' page-wide ones), without their backgrounds:
        # the page's own (app.css) show through.
        defs = HtmlFormatter(style=style, classprefix="").get_style_defs(f".{CODE_CLASS}")
        return [
            line
            for line in defs.splitlines()
            if line.startswith(f".{CODE_CLASS} .") and "background" not in line
        ]

    dark = "\n".join(rules("monokai"))
    return "\n".join(rules("default")) + f"\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n"


def diff_html(diff: str) -> Markup:
    """A unified diff (an edit, tool_calls.py) as the inside of a ``<pre class="diff">``: each
    line a span of its kind (file, hunk, add, del, same), the changed words of a removed line
    and of the added line it became in ``<mark>``; every text escaped. An added or removed
    line's span is a block (its background the line's width), any other ends with a newline."""
    lines = []
    for line in marked_lines(diff):
        pieces = Markup("").join(
            Markup("<mark>{}</mark>").format(text) if changed else escape(text)
            for changed, text in line.pieces
        )
        ending = "" if line.kind in ("add", "del") else "\n"
        lines.append(Markup('<span class="{}">{}</span>{}').format(line.kind, pieces, ending))
    return Markup("").join(lines)
