"""Search a person can trust: whole-token highlights (FTS5's highlight() as the oracle), symbols
and emoji, filters spelled as the other verbs print them, refused empty queries, readable
tool-call snippets, and the migration that re-tokenizes an existing index."""

from __future__ import annotations

import json
import re
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner, Result
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from session_builder import header, message, sessions_dir, write_session

from xcsh_store.cli.app import cli
from xcsh_store.errors import SearchQueryError
from xcsh_store.index import SessionIndex
from xcsh_store.index import db as database
from xcsh_store.index.read.search import (
    FTS_TOKENIZER,
    SEARCH_ROLES,
    FtsTokens,
    Highlighter,
    parse_search_query,
)

# Markers that are separators for the tokenizer and never occur in the generated texts.
OPEN, CLOSE = "\x02", "\x03"


def _cli(agent_dir: Path, *arguments: str) -> Result:
    return CliRunner().invoke(cli, ["--agent-dir", str(agent_dir), *arguments])


def _tool_call(entry_id: str, parent: str, name: str, arguments: object) -> dict:
    record = message(entry_id, parent, "assistant", "")
    record["message"]["content"] = [
        {"type": "toolCall", "id": "call-1", "name": name, "arguments": arguments}
    ]
    return record


@pytest.fixture
def corpus(agent_dir: Path) -> Path:
    """A session with symbols, a long text, a tool call and a tool result; synced."""
    long_text = "The error came first. " + "filler " * 300 + "then vllm or nccl broke"
    write_session(
        sessions_dir(agent_dir) / "s.jsonl",
        [
            header("sym"),
            message("u1", None, "user", "Tests pass ✅ now"),
            message("a1", "u1", "assistant", "Step one → step two"),
            message("u2", "a1", "user", "Please fix issue #123 today"),
            message("a2", "u2", "assistant", long_text),
            _tool_call("a3", "a2", "bash", {"command": 'echo "quoted"\nmake deploy', "n": 2}),
            message("t1", "a3", "toolResult", "Deployment finished", toolName="bash"),
        ],
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
    return agent_dir


def _search(agent_dir: Path, query: str, **filters: object) -> list:
    with SessionIndex.open(str(agent_dir), read_only=True) as index:
        return index.search(query, **filters)


# --------------------------------------------------------------------------------------------
# Highlights mark whole tokens


def test_a_short_word_inside_another_word_is_not_a_hit(corpus):
    (hit,) = _search(corpus, "vllm or nccl")
    assert hit.snippet.endswith("then [vllm] [or] [nccl] broke")
    assert "err[" not in hit.snippet and "[or]" in hit.snippet


def test_a_phrase_is_marked_as_one_span(corpus):
    (hit,) = _search(corpus, '"step two"')
    assert hit.snippet == "Step one → [step two]"


@pytest.fixture(scope="module")
def oracle() -> apsw.Connection:
    """entries_fts exactly as the migrations create it, in memory, and beside it ``oracle_fts``:
    a table with entries_fts's very tokenizer that keeps its text, so that FTS5's highlight()
    can say what it would mark (entries_fts keeps no text)."""
    connection = apsw.Connection(":memory:")
    database.apply_migrations(connection, database.load_migrations())
    ((sql,),) = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'entries_fts'")
    tokenize = "tokenize = " + sql.split("tokenize = ")[1].rsplit(")", 1)[0]
    connection.execute(f"CREATE VIRTUAL TABLE oracle_fts USING fts5 (text, {tokenize})")
    return connection


PIECES = [
    "vllm", "or", "error", "nccl", "Café", "cafe", "CAFÉ", "naïve", "✅", "→", "#123", "123",
    "a→b", "foo-bar", "x+y", "<div>", "`code`", "straße", "İstanbul", "ﬁle", "e\u0301t\u00e9",
    "日本語", "x²", "$HOME", "🥲", "25°C", "don't", "a_b",
]  # fmt: skip
SEPARATORS = [" ", "  ", "\n", ", ", ". ", "-", "/", " (", ") ", ""]


@st.composite
def text_and_query(draw: st.DrawFn) -> tuple[str, str]:
    pieces = draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=30))
    glue = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(pieces), max_size=len(pieces)))
    text = "".join(piece + sep for piece, sep in zip(pieces, glue, strict=True))
    words = []
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(pieces) - 1))
        length = draw(st.integers(1, 2))
        chosen = pieces[start : start + length]
        words.append('"' + " ".join(chosen) + '"' if len(chosen) > 1 else chosen[0])
    if not words[-1].startswith('"') and draw(st.booleans()):
        words[-1] = words[-1][: max(1, len(words[-1]) - 2)]
    return text, " ".join(words)


@settings(max_examples=examples(150), deadline=None)
@given(case=text_and_query())
def test_highlights_equal_fts5s_own(oracle, case):
    """Marked spans are whole tokens matching a query term, exactly where FTS5 marks them."""
    text, query = case
    tokens = FtsTokens(oracle)
    parsed = parse_search_query(query, tokens)
    if not parsed.terms:
        return
    oracle.execute("DELETE FROM oracle_fts")
    oracle.execute("INSERT INTO oracle_fts (rowid, text) VALUES (1, ?)", (text,))
    rows = oracle.execute(
        "SELECT highlight(oracle_fts, 0, ?, ?) FROM oracle_fts WHERE oracle_fts MATCH ?",
        (OPEN, CLOSE, parsed.match),
    ).fetchall()
    if not rows:
        return  # the highlighter only ever sees texts that match
    snippet = Highlighter(parsed, (OPEN, CLOSE), tokens).snippet(text, width=10_000)
    spans = tokens.spans(text.encode())
    head = len(text.encode()[: spans[0][0]].decode())
    tail = len(text.encode()[spans[-1][1] :].decode())
    marked = rows[0][0]
    assert snippet == " ".join(marked[head : len(marked) - tail].split())
    # The property itself: marks sit on token boundaries, each span starts with a query term.
    plain = snippet.replace(OPEN, "").replace(CLOSE, "")
    assert tokens.terms(plain) == tokens.terms(snippet.replace(OPEN, " ").replace(CLOSE, " "))
    firsts = {terms[0] for terms in parsed.terms}
    for span in snippet.split(OPEN)[1:]:
        first = tokens.terms(span.split(CLOSE)[0])[0]
        assert first in firsts or (
            parsed.prefix is not None and first.startswith(parsed.terms[-1][0])
        )


# --------------------------------------------------------------------------------------------
# Symbols and emoji


@pytest.mark.parametrize(
    ("query", "entry"), [("✅", "u1"), ("→", "a1"), ("#123", "u2"), ("issue #123", "u2")]
)
def test_symbols_people_search_for_are_found(corpus, query, entry):
    assert [hit.entry_id for hit in _search(corpus, query)] == [entry]


def test_symbols_are_found_and_marked_through_the_cli(corpus):
    result = _cli(corpus, "search", "--json", "✅")
    assert result.exit_code == 0, result.output
    (hit,) = json.loads(result.stdout)
    assert hit["snippet"] == "Tests pass «✅» now"
    result = _cli(corpus, "search", "--json", "#123")
    assert [hit["entry_id"] for hit in json.loads(result.stdout)] == ["u2"]


def test_ascii_symbols_still_separate_words(agent_dir):
    write_session(
        sessions_dir(agent_dir) / "code.jsonl",
        [header("code"), message("u1", None, "user", "see `render` in <div> with a+b and $HOME")],
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        for word in ("render", "div", "a", "b", "home"):
            assert [hit.entry_id for hit in index.search(word)] == ["u1"], word


# --------------------------------------------------------------------------------------------
# Filters


def test_model_filter_takes_the_provider_model_form_usage_prints(corpus):
    with SessionIndex.open(str(corpus), read_only=True) as index:
        (row,) = index.usage(by="model")
        both = {hit.entry_id for hit in index.search("step", model=row.key)}
        plain = {hit.entry_id for hit in index.search("step", model="claude-test")}
        assert row.key == "anthropic/claude-test" and both == plain == {"a1"}
        assert index.search("step", model="openai/claude-test") == []


def test_model_filter_through_the_cli(corpus):
    for model in ("anthropic/claude-test", "claude-test"):
        result = _cli(corpus, "search", "--json", "--model", model, "step")
        assert [hit["entry_id"] for hit in json.loads(result.stdout)] == ["a1"], model


def test_role_filter_ignores_case(corpus):
    assert [hit.entry_id for hit in _search(corpus, "deployment", role="TOOLRESULT")] == ["t1"]
    result = _cli(corpus, "search", "--json", "--role", "toolresult", "deployment")
    assert [hit["role"] for hit in json.loads(result.stdout)] == ["toolResult"]


def test_an_unknown_role_is_refused_with_the_valid_ones(corpus):
    with pytest.raises(SearchQueryError, match="toolResult"):
        _search(corpus, "deployment", role="tool")
    result = _cli(corpus, "search", "--role", "tool", "deployment")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert all(role in result.stderr for role in SEARCH_ROLES)


# --------------------------------------------------------------------------------------------
# Empty queries


@pytest.mark.parametrize("query", ["", "   ", "...", "- * ( )", '""', "-draft", "#"])
def test_a_query_without_words_is_refused(corpus, query):
    with pytest.raises(SearchQueryError):
        _search(corpus, query)
    result = _cli(corpus, "search", "--", query)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "word" in result.stderr


def test_punctuation_next_to_words_does_not_hide_hits(corpus):
    assert [hit.entry_id for hit in _search(corpus, "deployment ...")] == ["t1"]
    assert [hit.entry_id for hit in _search(corpus, "deployment -!")] == ["t1"]


# --------------------------------------------------------------------------------------------
# Tool calls


def test_tool_call_snippets_are_readable_text(corpus):
    (hit,) = _search(corpus, "quoted")
    assert hit.snippet == 'bash command: echo "[quoted]" make deploy n: 2'
    result = _cli(corpus, "search", "--json", "quoted")
    assert "\\" not in json.loads(result.stdout)[0]["snippet"]


def test_a_word_after_a_newline_in_tool_arguments_is_found(corpus):
    assert [hit.entry_id for hit in _search(corpus, "make deploy")] == ["a3"]


def test_deeply_nested_tool_arguments_are_indexed(agent_dir):
    """Deeper than orjson writes (255) and than Python's recursion limit (1000) allows."""
    record = json.dumps(_tool_call("a1", None, "todo", {"items": "NESTED"}))
    deep = record.replace('"NESTED"', "[" * 1000 + '"bottom"' + "]" * 1000)
    (sessions_dir(agent_dir) / "deep.jsonl").write_text(
        json.dumps(header("deep")) + "\n" + deep + "\n"
    )
    with SessionIndex.open(str(agent_dir)) as index:
        index.sync()
        assert [hit.entry_id for hit in index.search("bottom")] == ["a1"]


# --------------------------------------------------------------------------------------------
# Existing indexes


def test_an_index_from_before_0006_is_tokenized_again_on_its_next_sync(corpus):
    with SessionIndex.open(str(corpus)) as index:
        index.connection.execute(
            "DROP TABLE entries_vocab; DROP TABLE entries_fts;"
            " CREATE VIRTUAL TABLE entries_fts USING fts5"
            " (text, tokenize = 'unicode61 remove_diacritics 2');"
            " CREATE VIRTUAL TABLE entries_vocab USING fts5vocab ('entries_fts', 'row');"
            " INSERT INTO entries_fts (rowid, text) SELECT pk, 'old text' FROM entries;"
            " DROP TABLE search_terms;"
            " DELETE FROM schema_migrations"
            " WHERE name LIKE '0006%' OR name LIKE '0007%' OR name LIKE '0012%'"
        )
    with SessionIndex.open(str(corpus)) as index:
        assert index.sync().files_reindexed == 1
        assert [hit.entry_id for hit in index.search("✅")] == ["u1"]
        assert index.search("old text") == []
        assert index.verify().clean


SYMBOL_MATCH = (
    "SELECT e.id, entry_text(e.pk) FROM entries_fts JOIN entries AS e ON e.pk = entries_fts.rowid"
    " WHERE entries_fts MATCH '\"✅\"'"
)


def test_sql_reads_the_text_of_a_match_from_its_file(corpus):
    """entry_text(pk), which every connection of the store has, stands in for the text that
    entries_fts no longer keeps; the tokenizer finds symbols."""
    result = CliRunner().invoke(
        cli, ["--agent-dir", str(corpus), "sql", "--json", SYMBOL_MATCH], catch_exceptions=False
    )
    assert json.loads(result.output) == [{"id": "u1", "entry_text(e.pk)": "Tests pass ✅ now"}]


def test_the_highlighter_runs_the_tokenizer_entries_fts_declares(oracle):
    ((sql,),) = oracle.execute("SELECT sql FROM sqlite_master WHERE name = 'entries_fts'")
    declared = sql.split('tokenize = "')[1].split('"')[0]
    quoted = [arg if re.fullmatch(r"\w+", arg) else f"'{arg}'" for arg in FTS_TOKENIZER]
    assert declared == " ".join(quoted)
