"""The tours of the README and of docs/tour.md work as written: each command they show prints
what the document says.

The commands run on a fresh demo, each in a real terminal of 100 columns (see
``tests/readme_tour.py``); after a change of output, ``python tests/readme_tour.py --write``
brings both documents up to date.
"""

from __future__ import annotations

import re
import time

import pytest
from readme_tour import (
    DEMO_COMMAND,
    TOURS,
    Tour,
    differences,
    normalise,
    section,
    tour_steps,
)

from xcsh_store.cli.output.render import short_time
from xcsh_store.demo.build import DEMO_NOW

README, DOCS_TOUR = TOURS


@pytest.mark.parametrize("tour", TOURS, ids=lambda tour: tour.name)
def test_the_tour_is_what_the_program_prints(tour: Tour, tmp_path):
    root = tmp_path / "tour"
    root.mkdir()
    problems = differences(tour.path.read_text(encoding="utf-8"), tour, root)
    assert not problems, (
        f"The tour of {tour.name} differs from what the program prints; if the change is "
        "intended, run `python tests/readme_tour.py --write` and review the diff.\n\n"
        + "\n".join(problems)
    )


@pytest.mark.parametrize("tour", TOURS, ids=lambda tour: tour.name)
def test_every_command_of_the_tour_is_run(tour: Tour):
    text = tour.path.read_text(encoding="utf-8")
    steps = tour_steps(text, tour)
    start, end = section(text, tour.heading)
    shown = re.findall(r"^\$ xcsh-store .*$", text[start:end], re.MULTILINE)
    # The demo prints the commands it runs itself; they are part of its output.
    printed_by_demo = (
        re.findall(r"^\$ xcsh-store .*$", steps[0].expected, re.MULTILINE)
        if steps[0].command == DEMO_COMMAND
        else []
    )
    assert [f"$ {step.command}" for step in steps if step.script is None] == [
        line for line in shown if line not in printed_by_demo
    ]


def test_the_readme_shows_the_demo_and_docs_tour_the_rest_with_the_api_script():
    readme = tour_steps(README.path.read_text(encoding="utf-8"), README)
    assert readme[0].command == DEMO_COMMAND and len(readme) >= 2
    text = DOCS_TOUR.path.read_text(encoding="utf-8")
    docs = tour_steps(text, DOCS_TOUR)
    assert DEMO_COMMAND not in [step.command for step in docs]
    assert len(readme) + len(docs) >= 14
    api = [step for step in docs if step.script is not None]
    assert DOCS_TOUR.api_heading is not None
    start, end = section(text, DOCS_TOUR.api_heading)
    assert len(api) == 1 and api[0].script in text[start:end]
    assert "SessionIndex.open(agent_dir)" in api[0].script
    # The site shows the README's short tour at the top of docs/tour.md.
    assert '--8<-- "README.md:tour"' in text


def test_normalising_takes_over_only_what_must_differ():
    expected = "Wrote it (0.5s in all):\n  13 sessions\nIndex\n  last sync 2026-11-29 22:01\n"
    actual = "Wrote it (1.2s in all):\n  13 sessions\nIndex\n  last sync 2027-01-05 08:00\n"
    assert normalise(actual, expected) == expected
    # Anything else that differs still differs.
    changed = actual.replace("13 sessions", "14 sessions")
    assert normalise(changed, expected) != expected
    new = "2027-01-05T08-00-00-001Z_15e3875e60eb19fa.jsonl 2\n15e3875e60eb19fa 3c8365b0 user x\n"
    shown = "2026-12-01T09-20-51-075Z_15e1a23206bbde56.jsonl 2\n15e1a23206bbde56 f6b4b876 user x\n"
    assert normalise(new, shown) == shown
    assert normalise(new.replace("user x", "user y"), shown) != shown


def test_source_date_epoch_stands_for_now_in_table_times(monkeypatch):
    """The tour shows the demo's dates as in its year, whatever year the test runs in."""
    moment = "2026-11-17T09:21:00.000Z"
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(DEMO_NOW.timestamp())))
        assert short_time(moment) == "Nov 17 09:21"
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(DEMO_NOW.timestamp()) + 366 * 86400))
        assert short_time(moment) == "2026-11-17"
    finally:
        monkeypatch.undo()
        time.tzset()
