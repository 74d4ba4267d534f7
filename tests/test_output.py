"""OutputSink, truncation helpers, notices and sanitising (compatibility: Artifacts as in the
reference; Output lengths in code points)."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from fuzzing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from xcsh_store import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_COLUMN,
    DEFAULT_MAX_LINES,
    OutputSink,
    TailBuffer,
    format_bytes,
    format_head_truncation_notice,
    format_tail_truncation_notice,
    sanitize_text,
    truncate_head,
    truncate_head_bytes,
    truncate_line,
    truncate_tail,
    truncate_tail_bytes,
)
from xcsh_store.artifacts.output import sanitize_with_image_passthrough


def test_constants() -> None:
    assert (DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES, DEFAULT_MAX_COLUMN) == (3000, 51200, 1024)


# ------------------------------------------------------------------------------------------------
# sanitize_text


def test_sanitize_reference_example_colours_and_controls() -> None:
    text = "\x1b[31mred\x1b[0m\ra\u0000b\tline\ncarriage\r\u0001\u0085"
    assert sanitize_text(text) == "redab\tline\ncarriage"


def test_sanitize_reference_example_osc_title() -> None:
    assert sanitize_text("\x1b]0;title\x07hello") == "hello"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),  # OSC ended by ST
        ("a\x1bP1$r0m\x1b\\b", "ab"),  # DCS
        ("a\x1b_Gf=100;AAAA\x1b\\b", "ab"),  # APC (Kitty image) without passthrough
        ("a\x1b(Bb", "ab"),  # intermediate byte + final byte
        ("a\x1b7b\x1b8c", "a7b8c"),  # ESC + '7' is not a sequence: only ESC goes
        ("a\x1bMb", "ab"),  # two-character sequence
        ("a\x1b[31", "a[31"),  # unterminated CSI: only the ESC is removed
        ("a\x1b]0;never ends", "a]0;never ends"),  # unterminated OSC
        ("tab\tand\nnewline\x7f\x9b", "tab\tand\nnewline"),
        ("emoji 😀 stays", "emoji 😀 stays"),
        ("lone \ud800 surrogate", "lone  surrogate"),
    ],
)
def test_sanitize_sequences(text: str, expected: str) -> None:
    assert sanitize_text(text) == expected


def test_image_passthrough_is_off_by_default() -> None:
    kitty = "\x1b_Gf=100;AAAA\x1b\\"
    assert sanitize_with_image_passthrough(f"\x1b[1mx{kitty}") == "x"


def test_image_passthrough_keeps_complete_image_sequences() -> None:
    kitty = "\x1b_Gf=100;AAAA\x1b\\"
    iterm = "\x1b]1337;File=inline=1:AAAA\x07"
    sixel = "\x1bP0;1q#0~~\x1b\\"
    text = f"\x1b[1mbold\x1b[0m{kitty}\r\n{iterm}{sixel}end"
    assert sanitize_with_image_passthrough(text, True) == f"bold{kitty}\n{iterm}{sixel}end"


# ------------------------------------------------------------------------------------------------
# Byte and line truncation


def test_byte_truncation_with_zero_budget_is_empty() -> None:
    assert truncate_tail_bytes("abc", 0) == ("", 0)
    assert truncate_head_bytes("abc", 0) == ("", 0)


def test_byte_truncation_keeps_text_that_fits() -> None:
    assert truncate_tail_bytes("héllo", 6) == ("héllo", 6)
    assert truncate_head_bytes("héllo", 10) == ("héllo", 6)


def test_tail_bytes_never_start_inside_a_character() -> None:
    # "a€b": a(1) €(3) b(1); the last 3 bytes start inside the euro sign.
    assert truncate_tail_bytes("a€b", 3) == ("b", 1)
    assert truncate_tail_bytes("a€b", 4) == ("€b", 4)


def test_head_bytes_drop_a_character_cut_in_two() -> None:
    assert truncate_head_bytes("a€b", 3) == ("a", 1)
    assert truncate_head_bytes("a😀", 4) == ("a", 1)
    assert truncate_head_bytes("a😀", 5) == ("a😀", 5)


def test_byte_truncation_accepts_bytes() -> None:
    assert truncate_tail_bytes("a€b".encode(), 4) == ("€b", 4)
    assert truncate_head_bytes("a€b".encode(), 2) == ("a", 1)


def test_truncate_line() -> None:
    assert truncate_line("abcdef", 3) == ("abc…", True)
    assert truncate_line("abc", 3) == ("abc", False)
    assert truncate_line("x" * 1025).text == "x" * 1024 + "…"


def test_truncate_line_counts_code_points() -> None:
    assert truncate_line("😀😀😀", 2) == ("😀😀…", True)


def test_truncate_head_within_limits_is_unchanged() -> None:
    result = truncate_head("a\nb\nc")
    assert (result.content, result.truncated, result.total_lines, result.total_bytes) == (
        "a\nb\nc",
        False,
        3,
        5,
    )


def test_truncate_head_by_lines() -> None:
    result = truncate_head("l1\nl2\nl3\nl4", max_lines=2)
    assert (result.content, result.truncated_by, result.output_lines, result.output_bytes) == (
        "l1\nl2",
        "lines",
        2,
        5,
    )
    assert (result.total_lines, result.total_bytes) == (4, 11)


def test_truncate_head_by_bytes_counts_separators() -> None:
    result = truncate_head("aaa\nbbb\nccc", max_bytes=7)
    assert (result.content, result.truncated_by, result.output_lines, result.output_bytes) == (
        "aaa\nbbb",
        "bytes",
        2,
        7,
    )


def test_truncate_head_first_line_too_big() -> None:
    result = truncate_head("0123456789\nshort", max_bytes=5)
    assert result.content == ""
    assert result.first_line_exceeds_limit
    assert (result.truncated_by, result.output_lines, result.output_bytes) == ("bytes", 0, 0)


def test_truncate_tail_by_lines() -> None:
    result = truncate_tail("l1\nl2\nl3\nl4", max_lines=2)
    assert (result.content, result.truncated_by, result.output_lines) == ("l3\nl4", "lines", 2)


def test_truncate_tail_by_bytes() -> None:
    result = truncate_tail("aaa\nbbb\nccc", max_bytes=8)
    assert (result.content, result.truncated_by, result.output_bytes) == ("bbb\nccc", "bytes", 7)


def test_truncate_tail_last_line_too_big_keeps_its_last_bytes() -> None:
    result = truncate_tail("first\nxxxxé€", max_bytes=5)
    assert (result.content, result.output_bytes, result.output_lines) == ("é€", 5, 1)
    assert result.last_line_partial
    assert result.truncated_by == "bytes"


def test_tail_buffer_keeps_the_last_bytes() -> None:
    buffer = TailBuffer(4)
    for chunk in ("ab", "", "cd", "e€f"):
        buffer.append(chunk)
    assert (buffer.text(), buffer.bytes()) == ("€f", 4)


def test_tail_buffer_big_chunk_replaces_everything() -> None:
    buffer = TailBuffer(3)
    buffer.append("ab")
    buffer.append("123456")
    assert buffer.text() == "456"


def test_tail_buffer_with_zero_budget_holds_nothing() -> None:
    buffer = TailBuffer(0)
    buffer.append("abc")
    assert (buffer.text(), buffer.bytes()) == ("", 0)


# ------------------------------------------------------------------------------------------------
# Notices


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KB"),
        (1075, "1.0KB"),
        (1280, "1.3KB"),  # exactly 1.25: JavaScript's toFixed rounds the tie up
        (1536, "1.5KB"),
        (1048575, "1024.0KB"),
        (1048576, "1.0MB"),
        (3932160, "3.8MB"),
        (5 * 1024**3, "5.0GB"),
    ],
)
def test_format_bytes(size: int, text: str) -> None:
    assert format_bytes(size) == text


def test_tail_notice_not_truncated_is_empty() -> None:
    assert format_tail_truncation_notice(truncate_tail("short")) == ""


def test_tail_notice_for_lines() -> None:
    result = truncate_tail("\n".join(str(n) for n in range(1, 11)), max_lines=3)
    assert format_tail_truncation_notice(result) == "\n\n[Showing lines 8-10 of 10]"


def test_tail_notice_with_path_and_suffix() -> None:
    result = truncate_tail("a\nb\nc", max_lines=1)
    notice = format_tail_truncation_notice(result, full_output_path="/p/0.bash.log", suffix="!")
    assert notice == "\n\n[Showing lines 3-3 of 3. Full output: /p/0.bash.log!]"


def test_tail_notice_for_a_partial_last_line() -> None:
    content = "head\n" + "x" * 3000
    result = truncate_tail(content, max_bytes=1024)
    assert format_tail_truncation_notice(result, original_content=content) == (
        "\n\n[Showing last 1.0KB of line 2 (line is 2.9KB)]"
    )
    assert format_tail_truncation_notice(result) == "\n\n[Showing last 1.0KB of line 2]"


def test_head_notice() -> None:
    result = truncate_head("\n".join("x" * 5 for _ in range(10)), max_lines=4)
    assert format_head_truncation_notice(result) == (
        "\n\n[Showing lines 1-4 of 10. Use sel=L5 to continue]"
    )
    assert format_head_truncation_notice(result, start_line=21, total_file_lines=100) == (
        "\n\n[Showing lines 21-24 of 100. Use sel=L25 to continue]"
    )
    assert format_head_truncation_notice(truncate_head("short")) == ""


# ------------------------------------------------------------------------------------------------
# OutputSink


def test_sink_below_threshold_keeps_everything_in_memory(tmp_path: Path) -> None:
    artifact = tmp_path / "0.bash.log"
    sink = OutputSink(str(artifact), "0", spill_threshold=100)
    sink.push("hello\n")
    sink.push("world")
    summary = sink.dump()
    assert summary.output == "hello\nworld"
    assert (summary.truncated, summary.artifact_id) == (False, None)
    assert (summary.total_lines, summary.total_bytes) == (2, 11)
    assert (summary.output_lines, summary.output_bytes) == (2, 11)
    assert not artifact.exists()


def test_sink_notice_line_comes_first() -> None:
    sink = OutputSink()
    sink.push("out")
    assert sink.dump("exit code 1").output == "[exit code 1]\nout"


def test_sink_without_data_reports_zero_lines() -> None:
    summary = OutputSink().dump()
    assert (summary.output, summary.total_lines, summary.output_lines) == ("", 0, 0)


def test_sink_crossing_the_threshold_spills_the_whole_output(tmp_path: Path) -> None:
    artifact = tmp_path / "3.bash.log"
    sink = OutputSink(str(artifact), "3", spill_threshold=10)
    for chunk in ("hello\n", "world\n", "again\n"):
        sink.push(chunk)
    summary = sink.dump()
    assert artifact.read_text(encoding="utf-8") == "hello\nworld\nagain\n"
    assert summary.output == "rld\nagain\n"
    assert (summary.truncated, summary.artifact_id) == (True, "3")
    assert (summary.total_lines, summary.total_bytes) == (4, 18)
    assert (summary.output_lines, summary.output_bytes) == (3, 10)


def test_sink_one_huge_chunk(tmp_path: Path) -> None:
    artifact = tmp_path / "0.bash.log"
    sink = OutputSink(str(artifact), "0", spill_threshold=4)
    sink.push("0123456789")
    summary = sink.dump()
    assert (summary.output, summary.output_bytes) == ("6789", 4)
    assert artifact.read_text(encoding="utf-8") == "0123456789"


def test_sink_tail_is_utf8_boundary_safe() -> None:
    sink = OutputSink(spill_threshold=4)
    sink.push("ab€€")  # 8 bytes; the last 4 start inside the first euro sign
    summary = sink.dump()
    assert (summary.output, summary.output_bytes, summary.total_bytes) == ("€", 3, 8)


def test_sink_artifact_file_holds_raw_output_and_dump_sanitises(tmp_path: Path) -> None:
    artifact = tmp_path / "0.bash.log"
    sink = OutputSink(str(artifact), "0", spill_threshold=8)
    sink.push("\x1b[31mred\x1b[0m\r\n")
    summary = sink.dump()
    assert artifact.read_bytes() == b"\x1b[31mred\x1b[0m\r\n"
    assert summary.output == "ed\n"  # the tail "ed\x1b[0m\r\n" without escapes and \r


def test_sink_unwritable_artifact_path_falls_back_to_the_tail(tmp_path: Path) -> None:
    artifact = tmp_path / "missing-folder" / "0.bash.log"
    sink = OutputSink(str(artifact), "0", spill_threshold=4)
    sink.push("0123")
    sink.push("456789")
    summary = sink.dump()
    assert (summary.output, summary.truncated, summary.artifact_id) == ("6789", True, None)
    assert summary.total_bytes == 10
    assert not artifact.exists()


def test_sink_never_clobbers_an_existing_file(tmp_path: Path) -> None:
    artifact = tmp_path / "0.bash.log"
    artifact.write_text("older artifact", encoding="utf-8")
    sink = OutputSink(str(artifact), "0", spill_threshold=2)
    sink.push("new output")
    assert sink.dump().artifact_id is None
    assert artifact.read_text(encoding="utf-8") == "older artifact"


def test_sink_reports_no_artifact_when_the_file_was_removed(tmp_path: Path) -> None:
    artifact = tmp_path / "0.bash.log"
    sink = OutputSink(str(artifact), "0", spill_threshold=2)
    sink.push("spilled")
    artifact.unlink()
    assert sink.dump().artifact_id is None


def test_sink_without_artifact_path_only_truncates() -> None:
    sink = OutputSink(artifact_id="7", spill_threshold=3)
    sink.push("abcdef")
    summary = sink.dump()
    assert (summary.output, summary.truncated, summary.artifact_id) == ("def", True, None)


def test_push_bytes_joins_characters_split_across_chunks(tmp_path: Path) -> None:
    artifact = tmp_path / "0.bash.log"
    sink = OutputSink(str(artifact), "0", spill_threshold=5)
    data = "é€😀\n".encode()
    for index in range(len(data)):
        sink.push_bytes(data[index : index + 1])
    summary = sink.dump()
    assert artifact.read_text(encoding="utf-8") == "é€😀\n"
    assert summary.output == "😀\n"
    assert (summary.total_bytes, summary.total_lines) == (len(data), 2)


def test_push_bytes_keeps_a_bom() -> None:
    sink = OutputSink()
    sink.push_bytes(b"\xef\xbb")
    sink.push_bytes(b"\xbfhi")
    assert sink.dump().output == "\ufeffhi"


def test_dump_flushes_an_incomplete_trailing_character() -> None:
    sink = OutputSink()
    sink.push_bytes(b"ok\xe2\x82")
    summary = sink.dump()
    assert summary.output == "ok\ufffd"
    assert summary.total_bytes == 5


def test_flush_bytes_pushes_the_decoder_remainder() -> None:
    sink = OutputSink()
    sink.push_bytes(b"\xc3")
    assert sink.tail_text == ""
    sink.flush_bytes()
    assert sink.tail_text == "\ufffd"


def test_on_chunk_sees_raw_chunks() -> None:
    seen: list[str] = []
    sink = OutputSink(on_chunk=seen.append)
    sink.push("\x1b[1mbold")
    sink.push("\r\n")
    assert seen == ["\x1b[1mbold", "\r\n"]


def test_on_chunk_is_throttled_but_the_first_call_fires() -> None:
    seen: list[str] = []
    sink = OutputSink(on_chunk=seen.append, chunk_throttle_ms=60_000)
    for chunk in ("a", "b", "c"):
        sink.push(chunk)
    assert seen == ["a"]
    assert sink.dump().output == "abc"


def test_mask_secrets_applies_to_chunks_and_output(tmp_path: Path) -> None:
    artifact = tmp_path / "0.bash.log"
    seen: list[str] = []
    sink = OutputSink(
        str(artifact),
        "0",
        spill_threshold=8,
        on_chunk=seen.append,
        mask_secrets=lambda text: text.replace("hunter2", "*******"),
    )
    sink.push("pw=hunter2\n")
    summary = sink.dump("hunter2")
    assert seen == ["pw=*******\n"]
    assert artifact.read_text(encoding="utf-8") == "pw=*******\n"
    assert "hunter2" not in summary.output


text_chunks = st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=12), max_size=12)


@settings(max_examples=examples(150), deadline=None)
@given(chunks=text_chunks, threshold=st.integers(min_value=1, max_value=24))
def test_sink_spill_file_and_tail_property(chunks: list[str], threshold: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        artifact = Path(folder) / "0.bash.log"
        sink = OutputSink(str(artifact), "0", spill_threshold=threshold)
        for chunk in chunks:
            sink.push(chunk)
        raw_tail = sink.tail_text
        summary = sink.dump()
        whole = "".join(chunks).encode()
        assert summary.total_bytes == len(whole)
        assert summary.total_lines == ("".join(chunks).count("\n") + 1 if any(chunks) else 0)
        tail = raw_tail.encode()
        assert summary.output_bytes == len(tail)
        if summary.truncated:
            assert summary.artifact_id == "0"
            assert artifact.read_bytes() == whole
            assert whole.endswith(tail)
            # As many trailing bytes as fit, minus at most the 3 bytes of a cut character.
            assert threshold - 3 <= len(tail) <= threshold
        else:
            assert (raw_tail, summary.artifact_id) == ("".join(chunks), None)
            assert not artifact.exists()


@settings(max_examples=examples(150), deadline=None)
@given(data=st.binary(max_size=40), cuts=st.lists(st.integers(0, 40), max_size=8))
def test_push_bytes_decodes_like_one_whole_decode(data: bytes, cuts: list[int]) -> None:
    sink = OutputSink()
    edges = [0, *sorted(min(cut, len(data)) for cut in cuts), len(data)]
    for start, end in itertools.pairwise(edges):
        sink.push_bytes(data[start:end])
    sink.flush_bytes()
    assert sink.tail_text == data.decode("utf-8", "replace")
