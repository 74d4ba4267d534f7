"""Session text as HTML a page can hold: markdown rendered by markdown-it-py (CommonMark, raw
HTML off), its output cleaned by nh3 (Ammonia: an allow-list of tags, attributes and URL
schemes), code highlighted by Pygments with CSS classes (the page's policy allows no inline
style). Whatever a session says, what comes out runs nothing: a ``<script>`` is text,
``onerror=`` is dropped, a ``javascript:`` link loses its href."""

from __future__ import annotations

import functools

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

# Characters of one code block highlighted: past it the block is shown plain (Pygments'
# lexers take time in proportion to the text, and a tool result can be megabytes).
HIGHLIGHT_LIMIT = 100_000
# The class every highlighted block carries; code_css() styles the tokens under it.
CODE_CLASS = "code"

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
# Links to the web and mail only; images only from this server (a relative URL), so that a
# page never loads another site's image (the policy would block it anyway).
_SCHEMES = {"http", "https", "mailto"}


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if tag == "img" and attribute == "src" and ("://" in value or value.startswith("//")):
        return None
    return value


@functools.cache
def _formatter() -> HtmlFormatter:
    return HtmlFormatter(nowrap=True, classprefix="")


@functools.lru_cache(maxsize=128)
def _lexer(name: str) -> Lexer | None:
    """The lexer of a language name (looked up once: Pygments searches its whole table)."""
    try:
        return get_lexer_by_name(name, stripnl=False)
    except ClassNotFound:
        return None


def highlighted(code: str, language: str = "") -> Markup:
    """``code`` as the inside of a ``<pre>``: its tokens in spans of Pygments' classes when
    ``language`` names a lexer and the code is not too long; escaped text otherwise."""
    if language and len(code) <= HIGHLIGHT_LIMIT:
        lexer = _lexer(language.strip().split()[0].lower()) if language.strip() else None
        if lexer is not None:
            html = highlight(code, lexer, _formatter())
            # Pygments adds a newline a block did not have.
            return Markup(html[:-1] if html.endswith("\n") and not code.endswith("\n") else html)
    return escape(code)


def _fence(code: str, language: str, _attributes: str) -> str:
    return f'<pre class="{CODE_CLASS}"><code>{highlighted(code, language)}</code></pre>'


@functools.cache
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "highlight": _fence})
    return parser.enable(["table", "strikethrough"])


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


# Texts rendered lately, kept: a page reloaded after a sync shows mostly the same entries
# (at most ENTRY_SHOWN characters each: a few MB in all).
@functools.lru_cache(maxsize=256)
def markdown(text: str) -> Markup:
    """``text`` read as CommonMark (tables, strike-through), as clean HTML."""
    return clean(_parser().render(text))


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
