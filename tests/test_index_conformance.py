"""One contract, two indexes: every field of every question (index/read/questions.py) asked of
index.db (SQLite) and of the team index (PostgreSQL) over the same sessions, each index either
answering it alike or refusing it as the contract says; never one answering with the field left
out. A field added to a question fails here until it has a case below, and then until both
compilers answer it (or the case says why one refuses it).

The sessions: the real Claude Code, Codex and pi fixtures where those agents keep them (one
Claude Code file gone since, so kept by the archive), xcsh sessions in a project, a folder inside
it and another folder, two models, and prompts in history.db; synced once and pushed as host
``laptop``. Each case is (the question, a baseline that differs in that field only, what
each index does): both answers differ from the baseline's, so the field was compiled."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from datetime import UTC
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from isolation import REMOVED, isolated_environment
from real_home import lay_out_home
from session_builder import header, message_at, sessions_dir, write_session

from xcsh_store import HistoryStorage
from xcsh_store.index import (
    IndexReader,
    PromptQuery,
    SearchQuery,
    SessionFilter,
    SessionIndex,
    SessionQuery,
    UsageQuery,
)

# What a case expects of the two indexes: the same answer; both refusing the question (a
# ValueError naming the field); index.db refusing it and the team index answering it (hosts),
# or the other way round (a time zone: the team index sums UTC days only).
ALIKE, REFUSED, TEAM_ONLY, LOCAL_ONLY = "alike", "refused by both", "team only", "local only"
HOST = "laptop"
PROJECT = "/work/app"


@dataclass(frozen=True)
class Case:
    question: Any
    baseline: Any
    expect: str = ALIKE


def _with_filter(question_type: type, **changed: Any) -> tuple[Any, Any]:
    """A question of ``question_type`` with one filter field set, and its baseline without it."""
    base = {"text": "lightning"} if question_type is SearchQuery else {}
    if question_type is UsageQuery:
        base = {"by": ("agent", "model"), "zone": UTC}
    return (
        question_type(filter=SessionFilter(**changed), **base),
        question_type(filter=SessionFilter(), **base),
    )


def _filter_cases(question_type: type) -> dict[str, Case]:
    cases = {
        "cwd": Case(*_with_filter(question_type, cwd=PROJECT)),
        "project": Case(*_with_filter(question_type, project=PROJECT)),
        "agents": Case(*_with_filter(question_type, agents=("codex", "pi"))),
        "since": Case(*_with_filter(question_type, since="2026-03-01T10:30:00.000Z")),
        "until": Case(*_with_filter(question_type, until="2026-03-01T10:30:00.000Z")),
        # (A host that pushed nothing: the team index holds this one host only.)
        "host": Case(*_with_filter(question_type, host="ci"), expect=TEAM_ONLY),
        "archived": Case(*_with_filter(question_type, archived=True)),
    }
    if question_type is not SessionQuery:
        # Entries have no file of their own to be gone: a listing's question only.
        cases["archived"] = dataclasses.replace(cases["archived"], expect=REFUSED)
    return {f"filter.{name}": case for name, case in cases.items()}


LIGHTNING = SearchQuery(text="lightning")
USAGE = UsageQuery(by=("agent", "model"), zone=UTC)
CASES: dict[str, dict[str, Case]] = {
    "SessionQuery": {
        **_filter_cases(SessionQuery),
        "order": Case(SessionQuery(order="title"), SessionQuery()),
        "limit": Case(SessionQuery(limit=2), SessionQuery()),
    },
    "SearchQuery": {
        **_filter_cases(SearchQuery),
        "text": Case(LIGHTNING, SearchQuery(text="plutonium")),
        "role": Case(replace(LIGHTNING, role="assistant"), LIGHTNING),
        "model": Case(replace(LIGHTNING, model="anthropic/claude-other"), LIGHTNING),
        "limit": Case(replace(LIGHTNING, limit=0), LIGHTNING),
        "highlight": Case(replace(LIGHTNING, highlight=("«", "»")), LIGHTNING),
    },
    "UsageQuery": {
        **_filter_cases(UsageQuery),
        "by": Case(replace(USAGE, by=("model",)), USAGE),
        "zone": Case(
            replace(USAGE, by=("day",), zone=ZoneInfo("Pacific/Kiritimati")),
            replace(USAGE, by=("day",)),
            expect=LOCAL_ONLY,
        ),
    },
    "PromptQuery": {
        "text": Case(
            PromptQuery(text="lightning", agents=("xcsh",)), PromptQuery(agents=("xcsh",))
        ),
        "limit": Case(PromptQuery(limit=1, agents=("xcsh",)), PromptQuery(agents=("xcsh",))),
        "agents": Case(PromptQuery(agents=("codex",)), PromptQuery(agents=("xcsh",))),
    },
}
QUESTIONS = (SessionQuery, SearchQuery, UsageQuery, PromptQuery)


def every_field() -> Iterator[str]:
    """``Question.field`` for every field of every question, a filter's as ``filter.field``."""
    for question_type in QUESTIONS:
        for item in fields(question_type):
            if item.name == "filter":
                for inner in fields(SessionFilter):
                    yield f"{question_type.__name__}.filter.{inner.name}"
            else:
                yield f"{question_type.__name__}.{item.name}"


def answer(index: IndexReader, question: Any) -> Any:
    """What ``index`` answers, as facts both indexes share (never their own ids or order of
    equal ranks), or the ValueError it refuses the question with."""
    try:
        if isinstance(question, SessionQuery):
            return [session.path for session in index.sessions(question)]
        if isinstance(question, SearchQuery):
            hits = index.hits(question)
            return sorted((hit.path, hit.entry_id, hit.role, "«" in hit.snippet) for hit in hits)
        if isinstance(question, UsageQuery):
            rows = index.usage_rows(question)
            return [(row.keys, row.entries, row.tokens, round(row.cost or 0, 6)) for row in rows]
        # The team index holds each host's history.db, not the prompts read from sessions.
        hits = index.prompts(question)
        return [(hit.prompt, hit.session_path) for hit in hits if hit.source == "history"]
    except ValueError as error:
        return error


def _write_sessions(agent_dir: Path) -> None:
    """xcsh sessions in the project, a folder inside it and elsewhere, across 10:00-11:00 on
    2026-03-01, answered by two models."""
    folder = sessions_dir(agent_dir)
    for name, cwd, minute, model in (
        ("in-project", PROJECT, 5, "claude-test"),
        ("inside", f"{PROJECT}/sub", 20, "claude-other"),
        ("elsewhere", "/elsewhere", 40, "claude-test"),
    ):
        answer_entry = message_at(minute + 1, "a1", "u1", "assistant", f"lightning {name}")
        answer_entry["message"]["model"] = model
        write_session(
            folder / f"2026-03-01T10-{minute:02d}-00-000Z_{name}.jsonl",
            [
                header(name, cwd=cwd, title=f"{name} title",
                       timestamp=f"2026-03-01T10:{minute:02d}:00.000Z"),
                message_at(minute, "u1", None, "user", f"what about lightning in {name}"),
                answer_entry,
            ],
        )  # fmt: skip


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SessionIndex, Any]]:
    """index.db and the team index over the same sessions, built once for the module (in its
    own home and database: the autouse fixtures are per test)."""
    import team_server

    from xcsh_store.team import TeamIndex, push

    root = tmp_path_factory.mktemp("conformance")
    agent_dir = root / "agent"
    with pytest.MonkeyPatch.context() as patch:
        for variable, value in isolated_environment(root / "home").items():
            patch.setenv(variable, value)
        for variable in REMOVED:
            patch.delenv(variable, raising=False)
        patch.setenv("XCSH_AGENT_DIR", str(agent_dir))
        home = lay_out_home(root / "home")
        # Not oh-my-pi's copies of pi's sessions: index.db counts a session kept in two agents'
        # folders once, the team index once per file (a difference of usage, not of compiling).
        shutil.rmtree(home.omp_dir)
        _write_sessions(agent_dir)
        with HistoryStorage.open(str(agent_dir / "history.db")) as history:
            for prompt in ("what about lightning", "deploy the build", "what about thunder"):
                history.add(prompt)
        with SessionIndex.open(str(agent_dir)) as index:
            index.sync(workers=1)
        next(iter(home.of("claude").values())).unlink()  # kept by the archive
        with SessionIndex.open(str(agent_dir)) as index:
            index.sync(workers=1)
        for url in team_server.fresh_database():
            push(str(agent_dir), url, host=HOST)
            with (
                SessionIndex.open(str(agent_dir), read_only=True) as local,
                TeamIndex.open(url) as team,
            ):
                yield local, team


def _team_question(question: Any, expect: str) -> Any:
    """The question as the team index is asked it: of this host (the one host pushed), unless
    the case is about the host."""
    if expect == TEAM_ONLY or not hasattr(question, "filter"):
        return question
    return replace(question, filter=replace(question.filter, host=HOST))


@pytest.mark.parametrize("name", list(every_field()))
def test_both_indexes_answer_every_field_of_every_question_as_the_contract_says(
    both: tuple[SessionIndex, Any], name: str
) -> None:
    question_type, _, field_name = name.partition(".")
    case = CASES[question_type].get(field_name)
    assert case is not None, (
        f"{name} has no conformance case: add one here, and compile the field in both"
        " index/read/ (index.db) and team/reader.py (the team index)"
    )
    local, team = both
    ours = answer(local, case.question), answer(local, case.baseline)
    theirs = (
        answer(team, _team_question(case.question, case.expect)),
        answer(team, _team_question(case.baseline, case.expect)),
    )
    refused_by = {
        "index.db": isinstance(ours[0], ValueError),
        "the team index": isinstance(theirs[0], ValueError),
    }
    assert refused_by == {
        "index.db": case.expect in (REFUSED, TEAM_ONLY),
        "the team index": case.expect in (REFUSED, LOCAL_ONLY),
    }, (ours[0], theirs[0])
    for refused, shown in ((ours[0], "index.db"), (theirs[0], "the team index")):
        if isinstance(refused, ValueError):
            assert str(refused).startswith(f"{field_name.removeprefix('filter.')}: "), shown
    answered = [pair for pair in (ours, theirs) if not isinstance(pair[0], ValueError)]
    for asked, baseline in answered:
        assert asked != baseline, f"{name} changed nothing: is it compiled?"
    if case.expect == ALIKE:
        assert ours[0] == theirs[0]


def test_every_case_is_of_a_field_there_is():
    named = {f"{question}.{name}" for question, cases in CASES.items() for name in cases}
    assert named == set(every_field())
