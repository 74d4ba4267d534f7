"""What the picker asks of the index (cli/picker/source.py), on a real index: rows per
session with the best hit, prompts from the history, and previews that show a hit among the
entries around it."""

from __future__ import annotations

import pytest
from session_builder import flux_records, header, message_at, sessions_dir, write_session

from xcsh_store import HistoryStorage
from xcsh_store.cli.output.render import MARK_CLOSE, MARK_OPEN
from xcsh_store.cli.picker.source import PROMPTS, SESSIONS, PickSource
from xcsh_store.errors import SearchQueryError
from xcsh_store.paths import get_history_db_path


@pytest.fixture
def source(agent_dir, index):
    folder = sessions_dir(agent_dir)
    write_session(
        folder / "deploy.jsonl",
        [
            header("sess-deploy", title="Deploy the API", cwd="/work/api"),
            message_at(1, "u1", None, "user", "deploy the api to staging"),
            message_at(2, "a1", "u1", "assistant", "the deploy script needs the staging key"),
            message_at(3, "u2", "a1", "user", "and then deploy to production"),
            message_at(4, "a2", "u2", "assistant", "production is deployed"),
            *(
                message_at(5, f"x{number}", f"x{number - 1}" if number else "a2", "user", "more")
                for number in range(40)
            ),
        ],
    )
    write_session(folder / "flux.jsonl", flux_records())
    with HistoryStorage.open(get_history_db_path(str(agent_dir))) as history:
        history.add("a prompt typed in no session", "/work/elsewhere")
    index.sync()
    return PickSource(index)


def test_a_session_with_several_hits_is_one_row_pointing_at_its_best(source):
    rows = source.rows(SESSIONS, "deploy")
    assert [row.value for row in rows] == ["sess-deploy"]
    assert rows[0].title == "Deploy the API"
    assert f"{MARK_OPEN}deploy" in rows[0].text and MARK_CLOSE in rows[0].text
    assert rows[0].entry_id in {"u1", "a1", "u2", "a2"}


def test_no_query_lists_the_sessions_newest_first(source):
    assert [row.value for row in source.rows(SESSIONS, "  ")] == ["sess-deploy", "sess-branched"]


def test_a_query_of_punctuation_only_is_an_error_to_show(source):
    with pytest.raises(SearchQueryError):
        source.rows(SESSIONS, "?!")


def test_prompts_come_from_the_history_and_the_sessions(source):
    assert [row.value for row in source.rows(PROMPTS, "production")] == [
        "and then deploy to production"
    ]
    typed = source.rows(PROMPTS, "typed")
    assert [(row.value, row.path) for row in typed] == [("a prompt typed in no session", None)]


def test_a_preview_shows_the_hit_with_the_entries_around_it(source):
    (row,) = source.rows(SESSIONS, '"then deploy"')
    assert row.entry_id == "u2"
    preview = source.preview(row)
    assert preview.title == "Deploy the API"
    assert "/work/api" in preview.facts and "sess-deploy" in preview.facts
    kinds_texts = [(entry.kind, entry.text, entry.hit) for entry in preview.entries[:5]]
    assert kinds_texts == [
        ("user", "deploy the api to staging", False),
        ("assistant", "the deploy script needs the staging key", False),
        ("user", "and then deploy to production", True),
        ("assistant", "production is deployed", False),
        ("user", "more", False),
    ]
    assert preview.hit_at == 2
    assert preview.note == ""


def test_a_preview_keeps_only_a_few_entries_before_the_hit(source):
    (row,) = source.rows(SESSIONS, "deployed")
    preview = source.preview(row)
    assert preview.entries[preview.hit_at].text == "production is deployed"
    assert preview.hit_at == 3
    assert preview.entries[0].text == "deploy the api to staging"


def test_a_hit_on_an_abandoned_branch_is_shown_on_its_branch(source):
    (row,) = source.rows(SESSIONS, "plutonium")
    preview = source.preview(row)
    assert preview.note == "on a side branch"
    assert [entry.text for entry in preview.entries] == [
        "how do I configure the flux capacitor",
        "set gigawatts to 1.21",
        "abandoned idea about plutonium",
    ]
    assert preview.entries[preview.hit_at].hit


def test_a_session_without_a_hit_is_previewed_from_its_start(source):
    row = source.rows(SESSIONS, "")[1]
    preview = source.preview(row)
    assert preview.title == "Flux capacitor"
    assert preview.entries[0].text == "how do I configure the flux capacitor"
    assert not any(entry.hit for entry in preview.entries)


def test_a_prompt_of_no_session_is_previewed_alone(source):
    (row,) = source.rows(PROMPTS, "typed")
    preview = source.preview(row)
    assert [(entry.text, entry.hit) for entry in preview.entries] == [
        ("a prompt typed in no session", True)
    ]
    assert "/work/elsewhere" in preview.facts


def test_the_agent_filter_reaches_every_query(source):
    filtered = PickSource(source.index, agents=("claude",))
    assert filtered.rows(SESSIONS, "") == []
    assert filtered.rows(SESSIONS, "deploy") == []
    assert filtered.rows(PROMPTS, "production") == []
