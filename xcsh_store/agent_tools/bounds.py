"""Every MCP answer bounded in bytes, whatever the sessions hold: each string of it cut at
FIELD_CHARS characters (a title, a folder, a model, a summary can each be megabytes), then the
whole fitted into ANSWER_BYTES of JSON by shortening its page, the items of a list (sessions,
hits, entries, messages, prompts, rows) or the characters of a text (an entry's text, a page
of an output), with the offset of the next page set to what was left out. Where one item or
the rest of the answer is still too long (thousands of escaped control characters), the strings
are cut shorter until it fits.

The tools say how each pages (``Pages``); the server bounds every answer here, after it is
redacted and before it is sent, so that a tool's new fields are bounded too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xcsh_store.js import stringify

# Bytes of one answer's JSON, at most: a tenth of a 200,000-token context, so that an agent
# can read several pages before it has to forget one.
ANSWER_BYTES = 64 * 1024
# Characters of any string of an answer, but the page's text, at most.
FIELD_CHARS = 2000
# Shorter cuts, tried in turn when the answer does not fit with the one before.
SHORTER_CUTS = (500, 100, 20)
CUT_MARK = "…"
# What every tool's description says of it.
BUDGET_NOTE = (
    f"Every answer is at most {ANSWER_BYTES // 1024} KB of JSON and every text in it at most"
    f" {FIELD_CHARS:,} characters (cut with {CUT_MARK}); a page that would be longer is"
    " shortened, and next_offset continues it."
)


@dataclass(frozen=True)
class Pages:
    """How a tool's answer is shortened to fit: by dropping the last items of the list
    ``items``, or the last characters of the string ``text``. Either way ``next_offset`` (when
    the answer has one) is set to the ``offset`` of what was dropped first; a text without one
    ends with a note of what was cut."""

    items: str | None = None
    text: str | None = None


def cut(text: str, chars: int = FIELD_CHARS) -> str:
    """``text``, at most ``chars`` characters, the last a CUT_MARK where it was cut."""
    return text if len(text) <= chars else text[: chars - 1] + CUT_MARK


def cut_strings(value: Any, chars: int, keep: str | None = None) -> Any:
    """``value`` with every string in it (dict keys too) cut at ``chars``; the top-level field
    ``keep`` is left whole (the page's text, which bounded() fits by itself)."""
    if isinstance(value, str):
        return cut(value, chars)
    if isinstance(value, dict):
        return {
            cut(key, chars) if isinstance(key, str) else key: (
                item if key == keep else cut_strings(item, chars)
            )
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [cut_strings(item, chars) for item in value]
    return value


def size(value: Any) -> int:
    return len(stringify(value))


def bounded(answer: dict[str, Any], pages: Pages, limit: int = ANSWER_BYTES) -> dict[str, Any]:
    """``answer`` with every string cut at FIELD_CHARS and, when its JSON is still longer than
    ``limit`` bytes, its page shortened (``pages``) and, if need be, its strings cut shorter."""
    for chars in (FIELD_CHARS, *SHORTER_CUTS):
        shaped = cut_strings(answer, chars, keep=pages.text)
        if pages.items is not None and isinstance(shaped.get(pages.items), list):
            fitted = _fit_items(shaped, pages.items, limit)
        elif pages.text is not None and isinstance(shaped.get(pages.text), str):
            fitted = _fit_text(shaped, pages.text, limit)
        else:
            fitted = shaped if size(shaped) <= limit else None
        if fitted is not None:
            return fitted
    raise AssertionError(f"an answer cut at {SHORTER_CUTS[-1]} characters is over {limit} bytes")


def _fit_items(answer: dict[str, Any], key: str, limit: int) -> dict[str, Any] | None:
    """``answer`` with as many of the items of ``key`` as fit in ``limit`` (at least one when
    there are any; None when that one does not fit)."""
    items = answer[key]
    room = limit - size(answer | {key: []})
    if room < 0:
        return None
    kept = 0
    for item in items:
        room -= size(item) + (1 if kept else 0)  # the comma between two items
        if room < 0:
            break
        kept += 1
    if kept == len(items):
        return answer
    if kept == 0:
        return None
    return _continued(answer | {key: items[:kept]}, kept)


def _fit_text(answer: dict[str, Any], key: str, limit: int) -> dict[str, Any] | None:
    """``answer`` with as much of the text ``key`` as fits in ``limit``, with the note or
    next_offset that says where the rest is (None when not one character fits)."""
    text = answer[key]
    if size(answer) <= limit:
        return answer
    pages_on = "next_offset" in answer
    note = "" if pages_on else f"\n[cut here: {len(text):,} characters, too long for one answer]"
    room = limit - size(answer | {key: note})
    # The longest start of the text that fits (its JSON grows with every character).
    shortest, longest = 0, len(text)
    while shortest < longest:
        middle = (shortest + longest + 1) // 2
        if size(text[:middle]) - 2 <= room:  # its JSON less the quotes already counted
            shortest = middle
        else:
            longest = middle - 1
    if shortest == 0:
        return None
    if pages_on:
        return _continued(answer | {key: text[:shortest]}, shortest)
    return answer | {key: text[:shortest] + note}


def _continued(answer: dict[str, Any], kept: int) -> dict[str, Any]:
    """``answer`` cut after ``kept`` items or characters of its page: next_offset points past
    them (the offset key is where the page started), and ``more`` says there is more."""
    if "next_offset" in answer:
        answer["next_offset"] = answer.get("offset", 0) + kept
    if "more" in answer:
        answer["more"] = True
    return answer
