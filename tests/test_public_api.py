"""The public API of docs/api.md: exactly its names are ``xcsh_store.__all__``, each importable.

docs/api.md is prose written for people, so the names are read from it by its conventions:

* in a fenced code block, a line at column 0 that assigns (``NAME = …``, ``A, B = …``) or calls
  (``name(…)``) defines the names it starts with;
* in a heading, a CamelCase word (``SessionManager``) names a class;
* in code (a fenced block, or an inline span, string literals left out), a name that starts
  with a capital letter (``BlobStore``, ``LAST``) is public, unless it is a builtin
  (``KeyError``, ``None``);
* an inline span that is a lower-case name, alone or called (``format_bytes``,
  ``parse_query(q) -> …``), names a module function when its sentence opens with such a span
  (```parse_query(q)`, `apply_query(data, q)`…``) or with the word "Helpers"; in any other
  sentence (``BlobStore(dir)`: `put(…)`…``) it is a method or a field, not a top-level name.
"""

from __future__ import annotations

import builtins
import re
from pathlib import Path

import pytest

import xcsh_store

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"

_FENCED_BLOCK = re.compile(r"^```[^\n]*\n(.*?)^```[^\n]*$", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"`([^`]+)`")
_STRING = re.compile(r"\"[^\"]*\"|'[^']*'")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFINITION = re.compile(r"([A-Za-z_][A-Za-z0-9_, ]*?)\s*(?:=|\()")
_FUNCTION_SPAN = re.compile(r"([a-z_][a-z0-9_]*)(?:\(.*)?", re.DOTALL)
_CAMEL_CASE = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
# A sentence ends at a full stop followed by white space (outside code spans: see _sentences).
_SENTENCE_END = re.compile(r"\.\s+")


def _capitalised(code: str) -> set[str]:
    names = _NAME.findall(_STRING.sub("", code))
    return {name for name in names if name[0].isupper() and not hasattr(builtins, name)}


def _function(span: str) -> str | None:
    found = _FUNCTION_SPAN.fullmatch(span.strip())
    return found.group(1) if found and not hasattr(builtins, found.group(1)) else None


def _names_in_code_block(block: str) -> set[str]:
    names: set[str] = set()
    for line in block.splitlines():
        code = _STRING.sub("", line).split("#", 1)[0]
        names |= _capitalised(code)
        definition = _DEFINITION.match(code)
        if definition and not line[:1].isspace():
            names |= {name.strip() for name in definition.group(1).split(",")}
    return names


def _sentences(paragraph: str) -> list[str]:
    """The sentences of a paragraph; a full stop inside a code span (``index.md``) ends none."""
    spans: list[str] = []

    def hide(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    hidden = _SPAN.sub(hide, " ".join(paragraph.split()))
    restore = re.compile(r"\x00(\d+)\x00")
    return [
        restore.sub(lambda match: spans[int(match.group(1))], sentence)
        for sentence in _SENTENCE_END.split(hidden)
    ]


def _names_in_prose(prose: str) -> set[str]:
    names: set[str] = set()
    for paragraph in re.split(r"\n\s*\n", prose):
        if paragraph.lstrip().startswith("#"):
            names |= set(_CAMEL_CASE.findall(paragraph))
            continue
        for sentence in _sentences(paragraph):
            spans = _SPAN.findall(sentence)
            for span in spans:
                names |= _capitalised(span)
            opens_with_a_function = sentence.startswith("`") and _function(spans[0])
            if opens_with_a_function or sentence.startswith("Helpers"):
                names |= {name for name in map(_function, spans) if name}
    return names


def api_names(text: str) -> set[str]:
    """Every name docs/api.md says is importable from ``xcsh_store``."""
    blocks = _FENCED_BLOCK.findall(text)
    names = set().union(*(_names_in_code_block(block) for block in blocks))
    return names | _names_in_prose(_FENCED_BLOCK.sub("\n\n", text))


API_NAMES = sorted(api_names(API_DOC.read_text(encoding="utf-8")))


def test_the_package_exports_exactly_the_names_of_api_md():
    assert sorted(xcsh_store.__all__) == API_NAMES


@pytest.mark.parametrize("name", API_NAMES)
def test_the_public_api_is_importable_from_the_package(name):
    assert getattr(xcsh_store, name, None) is not None, f"xcsh_store.{name} is missing"


def test_the_names_are_read_from_every_part_of_api_md():
    """A spot check of the reading rules: one name found by each of them."""
    assert {
        "DEFAULT_MAX_COLUMN",  # a column-0 assignment of several names in a code block
        "get_default_session_dir",  # a column-0 call in a code block
        "LAST",  # a capitalised name inside a code block's line
        "SessionManager",  # a heading
        "SessionStorageWriter",  # a capitalised name inside a span
        "sanitize_text",  # a "Helpers" sentence
        "path_to_query",  # a sentence that opens with a function span
    } <= set(API_NAMES)
    assert not {"put", "append_message", "messages", "open_writer", "str", "KeyError"} & set(
        API_NAMES
    )


def test_session_index_is_the_index_class():
    from xcsh_store.index import SessionIndex

    assert xcsh_store.SessionIndex is SessionIndex
