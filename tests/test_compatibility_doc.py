"""Every citation of docs/compatibility.md names a rule that is in it, so none can dangle.

Code, tests and SQL cite a rule as ``(compatibility: <heading>)``, several joined by ``; ``, and
may wrap it over comment lines; Markdown files link to the rule's section instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "compatibility.md"
CITING_FOLDERS = ("xcsh_store", "tests", "benchmarks", "migrations")
CITING_SUFFIXES = (".py", ".sql")
# The Markdown files that may link to its sections: the READMEs and every page of the manual.
LINKING_FILES = (
    "README.md",
    "benchmarks/README.md",
    *sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md")),
)

CITATION = re.compile(r"\(compatibility: ([^()]*)\)")
# A line's leading indent and comment marker, so a citation wrapped over comment lines joins up.
_LINE_START = re.compile(r"^[ \t]*(?:#|--)?[ \t]*", re.MULTILINE)
_LINK = re.compile(r"\]\((?:[./]*docs/)?(compatibility\.md)?#([^)\s]+)\)")


def rule_headings(doc: str) -> set[str]:
    return {line[4:].strip() for line in doc.splitlines() if line.startswith("### ")}


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def cited_rules(text: str) -> list[str]:
    """Every rule named by a ``(compatibility: ...)`` citation in ``text``, in order."""
    joined = " ".join(_LINE_START.sub("", text).split())
    return [rule for match in CITATION.finditer(joined) for rule in match.group(1).split("; ")]


def citing_files() -> list[Path]:
    this_file = Path(__file__).resolve()
    return [
        path
        for folder in CITING_FOLDERS
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in CITING_SUFFIXES and path.resolve() != this_file
    ]


@pytest.fixture(scope="module")
def headings() -> set[str]:
    return rule_headings(DOC.read_text(encoding="utf-8"))


def test_citations_are_read_across_wrapped_comment_lines() -> None:
    text = "x = 1  # kept (compatibility: Lenient\n    # lines; Several objects on one line)\n"
    assert cited_rules(text) == ["Lenient lines", "Several objects on one line"]


def test_every_citation_names_a_rule_of_the_document(headings: set[str]) -> None:
    dangling = []
    count = 0
    for path in citing_files():
        name = path.relative_to(ROOT)
        text = path.read_text(encoding="utf-8")
        rules = cited_rules(text)
        count += len(rules)
        dangling += [f"{name}: {rule!r}" for rule in rules if rule not in headings]
        # A citation written in another form would escape the check above.
        malformed = text.count("compatibility:") - text.count("(compatibility:")
        assert malformed == 0, f"{name}: cite as (compatibility: <heading>)"
    assert not dangling, "citations of rules docs/compatibility.md does not have:\n" + "\n".join(
        dangling
    )
    assert count > 100  # the pattern still finds the citations


def test_every_link_into_the_document_names_a_section(headings: set[str]) -> None:
    doc = DOC.read_text(encoding="utf-8")
    anchors = {anchor(line.lstrip("#").strip()) for line in doc.splitlines() if line[:1] == "#"}
    assert {anchor(heading) for heading in headings} <= anchors
    broken = []
    for name in LINKING_FILES:
        text = (ROOT / name).read_text(encoding="utf-8")
        for match in _LINK.finditer(text):
            into_doc = match.group(1) is not None or name == "docs/compatibility.md"
            if into_doc and match.group(2) not in anchors:
                broken.append(f"{name}: #{match.group(2)}")
    assert not broken, "links to sections docs/compatibility.md does not have:\n" + "\n".join(
        broken
    )
