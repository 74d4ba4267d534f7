"""artifact:// and agent:// URLs, the JSON query language, paging and path safety."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import pytest
from fuzzing import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from xcsh_store import (
    InternalUrlError,
    apply_query,
    parse_query,
    path_to_query,
    read_internal_url,
    resolve_internal_url,
)
from xcsh_store.artifacts.pages import parse_line_selector
from xcsh_store.artifacts.urls import parse_internal_url


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    artifacts = tmp_path / "session"
    artifacts.mkdir()
    return artifacts


def error_of(url: str, artifacts_dir: Path | str | None, **page: int) -> str:
    with pytest.raises(InternalUrlError) as caught:
        if page:
            read_internal_url(url, artifacts_dir, **page)
        else:
            resolve_internal_url(url, artifacts_dir)
    return str(caught.value)


# ------------------------------------------------------------------------------------------------
# URL parsing and routing


def test_unknown_scheme() -> None:
    assert error_of("skill://x", None) == (
        "Unknown protocol: skill://\nSupported: agent://, artifact://"
    )


def test_not_a_url() -> None:
    assert error_of("notes.txt", None) == "Invalid URL: notes.txt"


def test_scheme_is_case_insensitive(folder: Path) -> None:
    (folder / "0.bash.log").write_text("out", encoding="utf-8")
    assert resolve_internal_url("ARTIFACT://0", folder).content == "out"


def test_raw_host_is_percent_decoded_with_case_kept() -> None:
    assert parse_internal_url("agent://My%20Output/x").raw_host == "My Output"


def test_raw_host_stays_raw_when_decoding_fails() -> None:
    assert parse_internal_url("agent://bad%zz").raw_host == "bad%zz"
    assert parse_internal_url("agent://%C3").raw_host == "%C3"


def test_plus_in_the_query_is_a_space() -> None:
    assert parse_internal_url("agent://x?q=.a+b&q=second").get_param("q") == ".a b"


def test_pathname_resolves_dot_segments() -> None:
    assert parse_internal_url("agent://x/a/../b/%2e/c").pathname == "/b/c"


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text())
def test_url_parser_raises_only_internal_url_errors(text: str) -> None:
    with contextlib.suppress(InternalUrlError):
        parse_internal_url(text)
    for scheme in ("agent", "artifact"):
        parsed = parse_internal_url(f"{scheme}://{text}")
        assert parsed.scheme == scheme
        assert parsed.pathname == "" or parsed.pathname.startswith("/")


# ------------------------------------------------------------------------------------------------
# artifact://


def test_artifact_errors_in_check_order(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert error_of("artifact://0", None) == "No session - artifacts unavailable"
    assert error_of("artifact://", None) == "No session - artifacts unavailable"
    # The id is checked before the folder.
    assert error_of("artifact://", missing) == (
        "artifact:// URL requires a numeric ID: artifact://0"
    )
    assert error_of("artifact://abc", missing) == "artifact:// ID must be numeric, got: abc"
    assert error_of("artifact://0", missing) == "No artifacts directory found"


def test_artifact_not_found_lists_ids_numerically(folder: Path) -> None:
    for name in ("10.bash.log", "2.python.log", "2.notes.txt", "context.md", "0-Agent.md"):
        (folder / name).write_text("x", encoding="utf-8")
    assert error_of("artifact://5", folder) == "Artifact 5 not found. Available: 2, 2, 10"


def test_artifact_not_found_in_an_empty_folder(folder: Path) -> None:
    assert error_of("artifact://0", folder) == "Artifact 0 not found. Available: none"


def test_artifact_content(folder: Path) -> None:
    (folder / "3.python.log").write_text("héllo\n", encoding="utf-8")
    resource = resolve_internal_url("artifact://3", folder)
    assert (resource.content, resource.content_type, resource.size) == ("héllo\n", "text/plain", 7)
    assert resource.source_path == str(folder / "3.python.log")
    assert (resource.url, resource.notes) == ("artifact://3", [])


def test_artifact_any_extension_and_path_after_the_id_is_ignored(folder: Path) -> None:
    (folder / "4.fetch.txt").write_text("page", encoding="utf-8")
    assert resolve_internal_url("artifact://4/ignored/path?q=x", folder).content == "page"


def test_artifact_id_may_be_percent_encoded(folder: Path) -> None:
    (folder / "1.bash.log").write_text("one", encoding="utf-8")
    assert resolve_internal_url("artifact://%31", folder).content == "one"


# ------------------------------------------------------------------------------------------------
# agent://


@pytest.fixture
def outputs(folder: Path) -> Path:
    document = {"foo": {"bar": [1, {"deep": "é"}]}, "items": [10, 20], "0": "zero", "n": None}
    (folder / "0-Json.md").write_text(json.dumps(document), encoding="utf-8")
    (folder / "1-Text.md").write_text("# Report\nall good\n", encoding="utf-8")
    return folder


def test_agent_errors_in_check_order(tmp_path: Path, outputs: Path) -> None:
    missing = tmp_path / "missing"
    assert error_of("agent://x", None) == "No session - agent outputs unavailable"
    # The folder is checked before the id.
    assert error_of("agent://", missing) == "No artifacts directory found"
    assert error_of("agent://", outputs) == "agent:// URL requires an output ID: agent://<id>"
    # Both extractions is refused before looking for the output.
    assert error_of("agent://nope/a?q=.b", outputs) == (
        "agent:// URL cannot combine path extraction with ?q="
    )


def test_agent_not_found_lists_md_outputs(outputs: Path) -> None:
    (outputs / "context.md").write_text("ctx", encoding="utf-8")
    (outputs / "0-Json.jsonl").write_text("{}", encoding="utf-8")
    message = error_of("agent://nope", outputs)
    first_line, available = message.split("\n")
    assert first_line == "Not found: nope"
    assert available.startswith("Available: ")
    assert sorted(available.removeprefix("Available: ").split(", ")) == [
        "0-Json",
        "1-Text",
        "context",
    ]


def test_agent_not_found_in_an_empty_folder(folder: Path) -> None:
    assert error_of("agent://x", folder) == "Not found: x\nAvailable: none"


def test_agent_raw_output(outputs: Path) -> None:
    resource = resolve_internal_url("agent://1-Text", outputs)
    assert (resource.content, resource.content_type) == ("# Report\nall good\n", "text/markdown")
    assert (resource.notes, resource.source_path) == ([], str(outputs / "1-Text.md"))


def test_agent_empty_q_is_no_extraction(outputs: Path) -> None:
    assert resolve_internal_url("agent://1-Text?q=", outputs).content_type == "text/markdown"


def test_agent_path_extraction(outputs: Path) -> None:
    resource = resolve_internal_url("agent://0-Json/foo/bar/1", outputs)
    assert resource.content == '{\n  "deep": "é"\n}'
    assert (resource.content_type, resource.notes) == (
        "application/json",
        ["Extracted: .foo.bar[1]"],
    )
    assert resource.size == len(resource.content.encode())


def test_agent_query_extraction(outputs: Path) -> None:
    resource = resolve_internal_url("agent://0-Json?q=.foo.bar[0]", outputs)
    assert (resource.content, resource.notes) == ("1", ["Extracted: .foo.bar[0]"])


def test_agent_extraction_of_a_missing_key_is_null(outputs: Path) -> None:
    assert resolve_internal_url("agent://0-Json?q=.missing.deeper", outputs).content == "null"


def test_agent_extraction_array_length_and_string_index(outputs: Path) -> None:
    assert resolve_internal_url("agent://0-Json?q=.items.length", outputs).content == "2"
    assert resolve_internal_url("agent://0-Json?q=.items.1", outputs).content == "20"
    assert resolve_internal_url("agent://0-Json/0", outputs).content == "null"  # [0] needs array
    assert resolve_internal_url("agent://0-Json?q=.0", outputs).content == '"zero"'


def test_agent_empty_path_query_returns_the_whole_document_pretty(outputs: Path) -> None:
    resource = resolve_internal_url("agent://0-Json//", outputs)
    assert resource.notes == []
    # JavaScript puts integer-like keys first; 2-space indent; non-ASCII kept as is.
    assert resource.content.startswith('{\n  "0": "zero",\n  "foo": {\n    "bar": [\n      1,')
    assert json.loads(resource.content)["foo"]["bar"][1]["deep"] == "é"


def test_agent_json_number_formatting_follows_javascript(folder: Path) -> None:
    (folder / "n.md").write_text('{"a": [1.0, 1e21, 1e-7, 12345678901234567890]}', "utf-8")
    content = resolve_internal_url("agent://n?q=.a", folder).content
    assert content == "[\n  1,\n  1e+21,\n  1e-7,\n  12345678901234567000\n]"


def test_agent_extraction_needs_valid_json(outputs: Path) -> None:
    assert error_of("agent://1-Text/a", outputs).startswith("Output 1-Text is not valid JSON: ")


def test_agent_extraction_rejects_nan(folder: Path) -> None:
    (folder / "nan.md").write_text("[NaN]", encoding="utf-8")
    assert error_of("agent://nan?q=[0]", folder).startswith("Output nan is not valid JSON: ")


def test_agent_invalid_query(outputs: Path) -> None:
    assert error_of("agent://0-Json?q=[0", outputs) == "Invalid query: missing ] in [0"


# ------------------------------------------------------------------------------------------------
# JSON query language


def test_path_to_query_reference_example() -> None:
    assert path_to_query("/foo/bar/0") == ".foo.bar[0]"


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("", ""),
        ("/", ""),
        ("//a//", ".a"),
        ("/my%20key/x", "['my key'].x"),
        ("/it's/back\\slash", "['it\\'s']['back\\\\slash']"),
        ("/100%", "['100%']"),
        ("/007", "[007]"),
    ],
)
def test_path_to_query(path: str, query: str) -> None:
    assert path_to_query(path) == query


@pytest.mark.parametrize(
    ("query", "tokens"),
    [
        ("", []),
        ("  .  ", []),
        (".", []),
        (".foo.bar[0]", ["foo", "bar", 0]),
        (".0", ["0"]),
        ("foo..bar", ["foo", "bar"]),
        ("[ 12 ]", [12]),
        ("['special-key']", ["special-key"]),
        ('["a\\"b"]', ['a"b']),
        ("['it\\'s']", ["it's"]),
        ("[key with spaces]", ["key with spaces"]),
        ("['a]", ["'a"]),
    ],
)
def test_parse_query(query: str, tokens: list[int | str]) -> None:
    assert parse_query(query) == tokens


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (".foo[0", "Invalid query: missing ] in .foo[0"),
        ("[ ]", "Invalid query: empty [] in [ ]"),
        (".foo bar", "Invalid query: unexpected token ' ' in .foo bar"),
        (" .a+b", "Invalid query: unexpected token '+' in  .a+b"),
    ],
)
def test_parse_query_errors(query: str, message: str) -> None:
    with pytest.raises(InternalUrlError) as caught:
        parse_query(query)
    assert str(caught.value) == message


def test_apply_query_javascript_property_semantics() -> None:
    data = {"list": [5, 6, 7], "text": "abc", "none": None}
    assert apply_query(data, ".list.length") == 3
    assert apply_query(data, ".list.2") == 7
    assert apply_query(data, ".list.02") is None  # not a canonical index
    assert apply_query(data, ".list[9]") is None
    assert apply_query(data, ".text.length") is None  # strings are not objects
    assert apply_query(data, ".none.x") is None
    assert apply_query(data, "[0]") is None  # index tokens need an array
    assert apply_query(data, ".missing", default="gone") == "gone"
    assert apply_query(data, "") is data


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text())
def test_query_functions_raise_only_internal_url_errors(text: str) -> None:
    with contextlib.suppress(InternalUrlError):
        apply_query({"a": [1, {"b": 2}]}, text)
    query = path_to_query(text)
    with contextlib.suppress(InternalUrlError):
        parse_query(query)


identifiers = st.text(alphabet="abcXYZ019_-", min_size=1, max_size=6)


@settings(max_examples=examples(200), deadline=None)
@given(segments=st.lists(identifiers, max_size=5))
def test_path_to_query_round_trips_plain_segments(segments: list[str]) -> None:
    expected = [int(s) if s.isdigit() else s for s in segments]
    assert parse_query(path_to_query("/" + "/".join(segments))) == expected


# ------------------------------------------------------------------------------------------------
# Paging (read_internal_url)


@pytest.fixture
def numbered(folder: Path) -> Path:
    (folder / "0.bash.log").write_text("\n".join(f"line {n}" for n in range(1, 11)), "utf-8")
    return folder


def test_read_whole_resource(numbered: Path) -> None:
    assert read_internal_url("artifact://0", numbered).endswith("line 9\nline 10")


def test_read_page_with_more_lines_notice(numbered: Path) -> None:
    assert read_internal_url("artifact://0", numbered, offset=3, limit=2) == (
        "line 3\nline 4\n\n[6 more lines in resource. Use sel=L5 to continue]"
    )


def test_read_page_to_the_end_has_no_notice(numbered: Path) -> None:
    assert read_internal_url("artifact://0", numbered, offset=9, limit=5) == "line 9\nline 10"


def test_read_beyond_the_end(numbered: Path) -> None:
    assert read_internal_url("artifact://0", numbered, offset=11) == (
        "Line 11 is beyond end of resource (10 lines total). "
        "Use sel=L1 to read from the start, or sel=L10 to read the last line."
    )


def test_read_rejects_line_zero_and_empty_ranges(numbered: Path) -> None:
    assert error_of("artifact://0", numbered, offset=0) == (
        "L0 is invalid; lines are 1-indexed. Use sel=L1."
    )
    assert error_of("artifact://0", numbered, offset=5, limit=0) == (
        "Invalid range L5-L4: end must be >= start."
    )


def test_line_selectors() -> None:
    assert parse_line_selector("L5") == (5, None)
    assert parse_line_selector("l5-L7") == (5, 3)
    assert parse_line_selector("L5-9") == (5, 5)
    with pytest.raises(
        InternalUrlError, match=r"^L0 is invalid; lines are 1-indexed\. Use sel=L1\.$"
    ):
        parse_line_selector("L0")
    with pytest.raises(InternalUrlError, match=r"^Invalid range L5-L3: end must be >= start\.$"):
        parse_line_selector("L5-L3")


def test_read_truncated_by_lines(folder: Path) -> None:
    (folder / "0.bash.log").write_text("\n".join("x" for _ in range(3005)), "utf-8")
    text = read_internal_url("artifact://0", folder, offset=2)
    assert text.endswith("x\n\n[Showing lines 2-3001 of 3005. Use sel=L3002 to continue]")


def test_read_truncated_by_bytes(folder: Path) -> None:
    line = "y" * 1000
    (folder / "0.bash.log").write_text("\n".join(line for _ in range(60)), "utf-8")
    text = read_internal_url("artifact://0", folder)
    # 51 lines of 1000 bytes plus 50 separators = 51050 bytes fit in 50 KiB.
    assert text.endswith("y\n\n[Showing lines 1-51 of 60 (49.9KB limit). Use sel=L52 to continue]")


def test_read_first_line_too_long_shows_a_snippet(folder: Path) -> None:
    (folder / "0.bash.log").write_text("short\n" + "é" * 30000 + "\nafter", "utf-8")
    text = read_internal_url("artifact://0", folder, offset=2)
    snippet, notice = text.split("\n\n")
    assert snippet == "é" * 25600
    # The reference's notice for this case (nothing whole was shown, so it says 2-1).
    assert notice == "[Showing lines 2-1 of 3 (0B limit). Use sel=L2 to continue]"


def test_read_extraction_is_whole_and_refuses_paging(outputs: Path) -> None:
    assert read_internal_url("agent://0-Json?q=.items", outputs) == "[\n  10,\n  20\n]"
    # Refused before the output is even looked up.
    for url in ("agent://0-Json?q=.items", "agent://missing/a"):
        assert error_of(url, outputs, offset=1) == (
            "Cannot combine query extraction with offset/limit"
        )


def test_read_raw_agent_output_can_be_paged(outputs: Path) -> None:
    assert read_internal_url("agent://1-Text", outputs, offset=2, limit=1) == (
        "all good\n\n[1 more lines in resource. Use sel=L3 to continue]"
    )


# ------------------------------------------------------------------------------------------------
# Safety: nothing outside the artifacts folder


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.md"
    path.write_text("top secret", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "url",
    [
        "agent://../secret",
        "agent://..",
        "agent://%2e%2e/secret",
        "agent://..%2fsecret",
        "agent://..%2Fsecret",
        "agent://%2Ftmp%2Fsecret",
        "agent://a%00b",
        "agent://..%5csecret",
        "agent://..\\secret",
        "agent://.",
    ],
)
def test_agent_ids_that_are_paths_are_refused(url: str, folder: Path, secret: Path) -> None:
    message = error_of(url, folder)
    assert message.startswith("agent:// ID must name a file inside the artifacts directory")


def test_agent_absolute_path_has_no_id(folder: Path) -> None:
    assert error_of("agent:///etc/passwd", folder) == (
        "agent:// URL requires an output ID: agent://<id>"
    )


def test_agent_symlink_leaving_the_folder_is_refused(folder: Path, secret: Path) -> None:
    (folder / "0-Leak.md").symlink_to(secret)
    assert "outside the artifacts directory" in error_of("agent://0-Leak", folder)


def test_artifact_symlink_leaving_the_folder_is_refused(folder: Path, secret: Path) -> None:
    (folder / "0.bash.log").symlink_to(secret)
    assert "outside the artifacts directory" in error_of("artifact://0", folder)


def test_dangling_symlink_leaving_the_folder_is_refused(folder: Path, tmp_path: Path) -> None:
    (folder / "0-Gone.md").symlink_to(tmp_path / "not-there.md")
    assert "outside the artifacts directory" in error_of("agent://0-Gone", folder)


def test_symlink_through_a_linked_folder_is_refused(
    folder: Path, secret: Path, tmp_path: Path
) -> None:
    (folder / "0-Sub").symlink_to(tmp_path)
    (folder / "0.bash.log").symlink_to(folder / "0-Sub" / "secret.md")
    assert "outside the artifacts directory" in error_of("artifact://0", folder)


def test_symlink_loop_is_refused(folder: Path) -> None:
    (folder / "0-Loop.md").symlink_to(folder / "1-Loop.md")
    (folder / "1-Loop.md").symlink_to(folder / "0-Loop.md")
    assert "symlink loop" in error_of("agent://0-Loop", folder)


def test_symlink_inside_the_folder_is_followed(folder: Path) -> None:
    (folder / "real.txt").write_text("inside", encoding="utf-8")
    (folder / "0-Alias.md").symlink_to(folder / "real.txt")
    assert resolve_internal_url("agent://0-Alias", folder).content == "inside"


def test_a_fifo_is_not_read(folder: Path) -> None:
    os.mkfifo(folder / "0.pipe.log")
    assert "not a regular file" in error_of("artifact://0", folder)


def test_a_folder_named_like_an_output_is_not_read(folder: Path) -> None:
    (folder / "0-Dir.md").mkdir()
    assert "not a regular file" in error_of("agent://0-Dir", folder)


def test_artifacts_folder_reached_through_a_symlink_works(folder: Path, tmp_path: Path) -> None:
    (folder / "0.bash.log").write_text("via link", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert resolve_internal_url("artifact://0", link).content == "via link"


host_characters = st.text(alphabet="./\\%2eEfF05a-\x00", max_size=12)


@settings(max_examples=examples(300), deadline=None)
@example(host="..%2fa", path="")
@example(host="..%2F0", path="?q=.a")
@given(host=host_characters, path=st.sampled_from(["", "/", "/a", "?q=.a"]))
def test_no_url_reads_outside_the_folder(host: str, path: str) -> None:
    with tempfile.TemporaryDirectory() as base:
        folder = Path(base) / "artifacts"
        folder.mkdir()
        (folder / "0-In.md").write_text('{"a": 1}', encoding="utf-8")
        (folder / "0.bash.log").write_text("inside", encoding="utf-8")
        for name in ("a.md", "0.md"):  # what "<folder>/../<id>.md" would reach
            (Path(base) / name).write_text('{"a": "top secret"}', encoding="utf-8")
        for scheme in ("agent", "artifact"):
            try:
                resource = resolve_internal_url(f"{scheme}://{host}{path}", folder)
            except InternalUrlError:
                continue
            real = os.path.realpath(resource.source_path)
            assert os.path.commonpath([str(folder.resolve()), real]) == str(folder.resolve())
            assert "top secret" not in resource.content
