"""The benchmark corpus generator writes valid, deterministic, correctly sized v3 agent dirs."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks import corpus
from benchmarks.corpus import (
    CorpusManifest,
    cached_corpus,
    generate_agent_dir,
    generate_blob_store,
    generate_deep_session,
    generate_many_small_sessions,
    generate_session_file,
    parse_size,
)

ROOT = Path(__file__).resolve().parent.parent
SEED = 11
AGENT_BYTES = 3_000_000
SESSION_BYTES = 6_000_000
DEEP = 3_000
BLOBS = 600
BLOB_REFERENCED = 0.8
BLOB_REF = re.compile(r"^blob:sha256:([0-9a-f]{64})$")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> CorpusManifest:
    # A higher image rate than the realistic default, so a 3 MB corpus has images to check.
    return generate_agent_dir(
        tmp_path_factory.mktemp("agent"),
        total_bytes=AGENT_BYTES,
        sessions=15,
        projects=4,
        seed=SEED,
        images=0.05,
    )


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> CorpusManifest:
    # One long session: rare events (labels, compactions, branch summaries) all occur in it.
    return generate_session_file(
        tmp_path_factory.mktemp("session"), target_bytes=SESSION_BYTES, seed=SEED, images=0.02
    )


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> CorpusManifest:
    return generate_deep_session(tmp_path_factory.mktemp("deep"), DEEP, SEED, side_branches=3)


@pytest.fixture(scope="module")
def blob_store(tmp_path_factory: pytest.TempPathFactory) -> CorpusManifest:
    return generate_blob_store(
        tmp_path_factory.mktemp("blobs"), BLOBS, BLOB_REFERENCED, SEED, images_per_session=100
    )


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> CorpusManifest:
    return generate_many_small_sessions(
        tmp_path_factory.mktemp("small"), 300, SEED, projects=7, mean_bytes=3_000
    )


@pytest.fixture(scope="module")
def every_corpus(
    agent: CorpusManifest,
    session: CorpusManifest,
    deep: CorpusManifest,
    blob_store: CorpusManifest,
    small: CorpusManifest,
) -> list[CorpusManifest]:
    return [agent, session, deep, blob_store, small]


# Generated files are read-only for the tests, so each is read and parsed once per run.
@functools.cache
def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


@functools.cache
def entries_of(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in lines_of(path)[1:]]


def all_files(manifests: list[CorpusManifest]) -> Iterator[Path]:
    for manifest in manifests:
        yield from manifest.session_paths()


def walk(value: Any) -> Iterator[Any]:
    """Every scalar inside a parsed JSON value."""
    if isinstance(value, dict):
        for item in value.values():
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)
    else:
        yield value


def path_to_root(by_id: dict[str, dict[str, Any]], start: str | None) -> list[str]:
    """Ids from ``start`` up to its root; fails instead of looping on a cycle."""
    path: list[str] = []
    while start is not None:
        assert start not in path, f"parent cycle through {start}"
        path.append(start)
        start = by_id[start]["parentId"]
    return path


def tree_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != corpus.MANIFEST_NAME
    }


# -- determinism ---------------------------------------------------------------------------------


def test_same_seed_writes_byte_identical_files_in_any_interpreter(tmp_path: Path) -> None:
    # A fresh interpreter with another hash seed: no set or hash order may leak into the output.
    params = "total_bytes=400_000, sessions=4, projects=2, seed=11, images=0.05"
    code = f"import sys, benchmarks.corpus as c; c.generate_agent_dir(sys.argv[1], {params})"
    there = tmp_path / "there"
    environment = {**os.environ, "PYTHONHASHSEED": "12345"}
    child = subprocess.Popen([sys.executable, "-c", code, str(there)], cwd=ROOT, env=environment)
    here = generate_agent_dir(
        tmp_path / "here", total_bytes=400_000, sessions=4, projects=2, seed=SEED, images=0.05
    )
    assert child.wait(timeout=120) == 0
    assert tree_files(Path(here.agent_dir)) == tree_files(there)


def test_output_is_the_same_for_any_number_of_workers(tmp_path: Path) -> None:
    # 40 sessions make two chunks, so two workers really split the work.
    params = {"total_bytes": 300_000, "sessions": 40, "projects": 3, "seed": SEED, "images": 0.05}
    one = generate_agent_dir(tmp_path / "one", workers=1, **params)
    two = generate_agent_dir(tmp_path / "two", workers=2, **params)
    assert tree_files(Path(one.agent_dir)) == tree_files(Path(two.agent_dir))
    assert (one.files, one.rare_words, one.blobs_referenced) == (
        two.files,
        two.rare_words,
        two.blobs_referenced,
    )


def test_same_seed_gives_the_same_file_times(tmp_path: Path) -> None:
    first = generate_agent_dir(
        tmp_path / "a", total_bytes=200_000, sessions=3, projects=2, seed=SEED
    )
    second = generate_agent_dir(
        tmp_path / "b", total_bytes=200_000, sessions=3, projects=2, seed=SEED
    )
    times = [[p.stat().st_mtime_ns for p in m.session_paths()] for m in (first, second)]
    assert times[0] == times[1]


def test_another_seed_writes_other_sessions(tmp_path: Path) -> None:
    first = generate_agent_dir(
        tmp_path / "a", total_bytes=200_000, sessions=3, projects=2, seed=SEED
    )
    second = generate_agent_dir(
        tmp_path / "b", total_bytes=200_000, sessions=3, projects=2, seed=SEED + 1
    )
    assert {f.session_id for f in first.files}.isdisjoint(f.session_id for f in second.files)


# -- file format ---------------------------------------------------------------------------------


def test_every_line_is_a_compact_json_object_as_js_writes_it(
    every_corpus: list[CorpusManifest],
) -> None:
    for path in all_files(every_corpus):
        for line in lines_of(path):
            parsed = orjson.loads(line)
            assert isinstance(parsed, dict)
            # orjson writes JS's form for our value ranges; re-serialising must give the same bytes.
            assert orjson.dumps(parsed) == line


def test_no_number_is_an_integral_float_or_in_exponent_form(
    every_corpus: list[CorpusManifest],
) -> None:
    floats = []
    for path in all_files(every_corpus):
        for line in lines_of(path):
            floats += [v for v in walk(orjson.loads(line)) if isinstance(v, float)]
    assert floats, "usage costs should include fractional numbers"
    assert not [v for v in floats if v.is_integer()]
    # Below 1e-5 orjson writes 1e-6 where JS writes 0.000001; from 1e16 on both use exponents
    # but differently.
    assert not [v for v in floats if not 1e-5 <= abs(v) < 1e16]


def test_every_file_starts_with_a_v3_header(every_corpus: list[CorpusManifest]) -> None:
    for path in all_files(every_corpus):
        header = orjson.loads(lines_of(path)[0])
        assert list(header)[:5] == ["type", "version", "id", "timestamp", "cwd"]
        assert (header["type"], header["version"]) == ("session", 3)
        assert path.name.endswith(f"_{header['id']}.jsonl")


def test_files_live_in_the_folder_of_their_cwd(agent: CorpusManifest) -> None:
    for path in agent.session_paths():
        cwd = orjson.loads(lines_of(path)[0])["cwd"]
        assert path.parent.name == "--" + cwd.lstrip("/").replace("/", "-") + "--"


def test_entry_keys_follow_the_reference_order(every_corpus: list[CorpusManifest]) -> None:
    base = ["type", "id", "parentId", "timestamp"]
    for path in all_files(every_corpus):
        for entry in entries_of(path):
            keys = list(entry)
            if entry["type"] == "custom":
                assert keys == ["type", "customType", "data", *base[1:]]
            elif entry["type"] == "custom_message":
                assert keys[-4:] == ["attribution", *base[1:]]
            else:
                assert keys[:4] == base


def test_every_entry_type_of_the_brief_occurs(session: CorpusManifest) -> None:
    types: Counter[str] = Counter()
    roles: Counter[str] = Counter()
    for path in session.session_paths():
        for entry in entries_of(path):
            types[entry["type"]] += 1
            if entry["type"] == "message":
                roles[entry["message"]["role"]] += 1
    expected = {
        "message",
        "model_change",
        "thinking_level_change",
        "custom",
        "custom_message",
        "label",
        "compaction",
        "branch_summary",
    }
    assert expected <= set(types)
    assert {"user", "assistant", "toolResult"} <= set(roles)


# -- tree ----------------------------------------------------------------------------------------


def test_ids_are_unique_within_each_file(every_corpus: list[CorpusManifest]) -> None:
    for path in all_files(every_corpus):
        ids = [entry["id"] for entry in entries_of(path)]
        assert len(ids) == len(set(ids))


def test_parents_are_earlier_entries_of_the_same_file(every_corpus: list[CorpusManifest]) -> None:
    for path in all_files(every_corpus):
        seen: set[str] = set()
        for entry in entries_of(path):
            assert entry["parentId"] is None or entry["parentId"] in seen
            seen.add(entry["id"])


def test_timestamps_increase_within_a_file(every_corpus: list[CorpusManifest]) -> None:
    for path in all_files(every_corpus):
        stamps = [entry["timestamp"] for entry in entries_of(path)]
        assert stamps == sorted(stamps)
        assert len(set(stamps)) == len(stamps)


def test_sessions_spread_over_months(agent: CorpusManifest) -> None:
    starts = sorted(orjson.loads(lines_of(p)[0])["timestamp"][:7] for p in agent.session_paths())
    assert len(set(starts)) >= 4


def test_sessions_branch(agent: CorpusManifest) -> None:
    children: Counter[str | None] = Counter()
    for path in agent.session_paths():
        for entry in entries_of(path):
            children[(path.name, entry["parentId"])] += 1
    assert any(count > 1 for (_, parent), count in children.items() if parent is not None)


def test_branch_summaries_hang_off_their_branch_point(session: CorpusManifest) -> None:
    summaries = 0
    for path in session.session_paths():
        entries = entries_of(path)
        for entry in entries:
            if entry["type"] == "branch_summary":
                summaries += 1
                assert entry["fromId"] == entry["parentId"]
                siblings = [e for e in entries if e["parentId"] == entry["parentId"]]
                assert len(siblings) > 1
    assert summaries


def test_compactions_keep_an_entry_on_their_own_path(session: CorpusManifest) -> None:
    compactions = 0
    for path in session.session_paths():
        by_id = {entry["id"]: entry for entry in entries_of(path)}
        for entry in by_id.values():
            if entry["type"] == "compaction":
                compactions += 1
                assert entry["firstKeptEntryId"] in path_to_root(by_id, entry["parentId"])
    assert compactions


def test_tool_results_answer_an_earlier_tool_call(every_corpus: list[CorpusManifest]) -> None:
    for path in all_files(every_corpus):
        calls: set[str] = set()
        for entry in entries_of(path):
            message = entry.get("message") or {}
            if message.get("role") == "assistant":
                calls |= {b["id"] for b in message["content"] if b["type"] == "toolCall"}
            elif message.get("role") == "toolResult":
                assert message["toolCallId"] in calls


def test_labels_target_an_existing_entry(session: CorpusManifest) -> None:
    labels = 0
    for path in session.session_paths():
        ids: set[str] = set()
        for entry in entries_of(path):
            if entry["type"] == "label":
                labels += 1
                assert entry["targetId"] in ids
            ids.add(entry["id"])
    assert labels


# -- deep session --------------------------------------------------------------------------------


def test_deep_session_leaf_is_exactly_n_deep(deep: CorpusManifest) -> None:
    [path] = deep.session_paths()
    entries = entries_of(path)
    by_id = {entry["id"]: entry for entry in entries}
    leaf = entries[-1]["id"]
    assert (leaf, len(path_to_root(by_id, leaf))) == (deep.deep_leaves[deep.files[0].path], DEEP)


def test_deep_session_has_side_branches(deep: CorpusManifest) -> None:
    assert deep.files[0].branches == 3
    assert deep.files[0].entries > DEEP


# -- blobs ---------------------------------------------------------------------------------------


def blob_refs(manifest: CorpusManifest) -> set[str]:
    refs = set()
    for path in manifest.session_paths():
        for entry in entries_of(path):
            refs |= {
                m.group(1) for v in walk(entry) if isinstance(v, str) and (m := BLOB_REF.match(v))
            }
    return refs


def blob_files(manifest: CorpusManifest) -> dict[str, bytes]:
    folder = Path(manifest.agent_dir) / "blobs"
    return {path.name: path.read_bytes() for path in folder.iterdir()} if folder.exists() else {}


@pytest.fixture(params=["agent", "session", "blob_store"])
def with_images(request: pytest.FixtureRequest) -> CorpusManifest:
    """Each corpus that has images."""
    return request.getfixturevalue(request.param)


def test_blob_references_resolve_except_the_declared_dangling_ones(
    with_images: CorpusManifest,
) -> None:
    refs = blob_refs(with_images)
    assert refs, "the corpus should reference images"
    assert refs - set(blob_files(with_images)) == set(with_images.blobs_dangling)


def test_blob_files_are_named_by_their_sha256(with_images: CorpusManifest) -> None:
    files = blob_files(with_images)
    assert files
    assert all(hashlib.sha256(data).hexdigest() == digest for digest, data in files.items())


def test_manifest_tells_referenced_from_unreferenced_blobs(with_images: CorpusManifest) -> None:
    manifest = with_images
    refs = blob_refs(manifest)
    files = set(blob_files(manifest))
    assert (set(manifest.blobs_referenced), set(manifest.blobs_unreferenced)) == (
        files & refs,
        files - refs,
    )


def test_blob_store_has_the_requested_count_and_share(blob_store: CorpusManifest) -> None:
    assert (len(blob_store.blobs_referenced), len(blob_store.blobs_unreferenced)) == (
        round(BLOBS * BLOB_REFERENCED),
        BLOBS - round(BLOBS * BLOB_REFERENCED),
    )


def test_blob_sizes_are_small_images(blob_store: CorpusManifest) -> None:
    sizes = [len(data) for data in blob_files(blob_store).values()]
    assert min(sizes) >= corpus.BLOB_MIN_BYTES and max(sizes) <= corpus.BLOB_MAX_BYTES


# -- sizes ---------------------------------------------------------------------------------------


def test_agent_dir_total_is_within_ten_percent(agent: CorpusManifest) -> None:
    actual = sum(path.stat().st_size for path in agent.session_paths())
    assert actual == agent.total_bytes
    assert abs(actual - AGENT_BYTES) <= AGENT_BYTES / 10


def test_single_session_file_is_within_ten_percent(session: CorpusManifest) -> None:
    [path] = session.session_paths()
    assert abs(path.stat().st_size - SESSION_BYTES) <= SESSION_BYTES / 10


def test_small_sessions_average_within_ten_percent(small: CorpusManifest) -> None:
    mean = small.total_bytes / small.sessions
    assert small.sessions == 300
    assert abs(mean - 3_000) <= 300


def test_tool_results_vary_from_tiny_to_large(session: CorpusManifest) -> None:
    sizes = []
    for entry in entries_of(session.session_paths()[0]):
        message = entry.get("message") or {}
        if message.get("role") == "toolResult":
            sizes.append(sum(len(b.get("text", "")) for b in message["content"]))
    assert min(sizes) < 200 and max(sizes) > 10_000


# -- search material -----------------------------------------------------------------------------


def entry_texts(entry: dict[str, Any]) -> str:
    return "\n".join(v for v in walk(entry) if isinstance(v, str))


def test_rare_words_hit_exactly_the_entries_the_manifest_says(agent: CorpusManifest) -> None:
    pattern = re.compile(r"\b(" + "|".join(agent.rare_words) + r")\b")
    hits: Counter[str] = Counter()
    for path in agent.session_paths():
        for entry in entries_of(path):
            hits.update(set(pattern.findall(entry_texts(entry))))
    assert agent.rare_words
    assert dict(hits) == agent.rare_words


def test_common_words_are_in_most_sessions(agent: CorpusManifest) -> None:
    word = agent.common_words[0]
    with_word = sum(
        re.search(rf"\b{word}\b", p.read_text()) is not None for p in agent.session_paths()
    )
    assert with_word == agent.sessions


def test_text_uses_thousands_of_distinct_words(agent: CorpusManifest) -> None:
    words: set[str] = set()
    for path in agent.session_paths():
        for entry in entries_of(path):
            words.update(re.findall(r"[a-z]{3,}", entry_texts(entry).lower()))
    assert len(words) > 3_000


# -- manifest, cache, script ---------------------------------------------------------------------


def test_manifest_round_trips_through_json(agent: CorpusManifest) -> None:
    assert CorpusManifest.from_json(agent.to_json()) == agent


def test_manifest_counts_match_the_files(agent: CorpusManifest) -> None:
    entries = sum(len(lines_of(path)) - 1 for path in agent.session_paths())
    assert (agent.entries, agent.sessions) == (entries, 15)


def test_cached_corpus_reuses_a_build_with_the_same_parameters(tmp_path: Path) -> None:
    first = cached_corpus("tiny", generate_many_small_sessions, root=tmp_path, count=5, seed=SEED)
    marker = tmp_path / "tiny" / "marker"
    marker.write_text("a rebuild would remove this")
    second = cached_corpus("tiny", generate_many_small_sessions, root=tmp_path, count=5, seed=SEED)
    assert (second, marker.exists()) == (first, True)


def test_cached_corpus_rebuilds_when_parameters_change(tmp_path: Path) -> None:
    cached_corpus("tiny", generate_many_small_sessions, root=tmp_path, count=5, seed=SEED)
    rebuilt = cached_corpus("tiny", generate_many_small_sessions, root=tmp_path, count=6, seed=SEED)
    assert (rebuilt.sessions, len(list((tmp_path / "tiny").rglob("*.jsonl")))) == (6, 6)


def test_cached_corpus_rebuilds_for_another_generator_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cached_corpus("tiny", generate_many_small_sessions, root=tmp_path, count=2, seed=SEED)
    monkeypatch.setattr(corpus, "GENERATOR_VERSION", corpus.GENERATOR_VERSION + 1)
    second = cached_corpus("tiny", generate_many_small_sessions, root=tmp_path, count=2, seed=SEED)
    assert second.cache_key != first.cache_key


def test_cached_corpus_ignores_the_number_of_workers(tmp_path: Path) -> None:
    first = cached_corpus("tiny", generate_many_small_sessions, root=tmp_path, count=2, workers=1)
    second = cached_corpus("tiny", generate_many_small_sessions, root=tmp_path, count=2, workers=2)
    assert second.cache_key == first.cache_key


def failing_builder(path: Path, **params: Any) -> CorpusManifest:
    generate_many_small_sessions(path, 2, SEED)
    raise RuntimeError("builder failed")


def test_cached_corpus_cleans_up_after_a_failed_build(tmp_path: Path) -> None:
    root = tmp_path / "data"
    with pytest.raises(RuntimeError, match="builder failed"):
        cached_corpus("tiny", failing_builder, root=root)
    assert list(root.iterdir()) == []


def test_cached_corpus_leaves_only_the_finished_corpus(tmp_path: Path) -> None:
    root = tmp_path / "data"
    manifest = cached_corpus("tiny", generate_many_small_sessions, root=root, count=3, seed=SEED)
    assert [p.name for p in root.iterdir()] == ["tiny"]
    assert CorpusManifest.read(root / "tiny" / corpus.MANIFEST_NAME) == manifest


def test_script_writes_the_corpus_and_its_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert corpus.main([str(out), "--shape", "small", "--count", "4", "--seed", str(SEED)]) == 0
    manifest = CorpusManifest.read(out / corpus.MANIFEST_NAME)
    assert manifest.sessions == 4 and "session files" in capsys.readouterr().out


def test_script_refuses_a_non_empty_output_dir(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(SystemExit):
        corpus.main([str(tmp_path), "--shape", "small", "--count", "1"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1GB", 10**9),
        ("200MB", 200 * 10**6),
        ("512KiB", 512 * 1024),
        ("4096", 4096),
        ("1.5 gb", 15 * 10**8),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


def test_parse_size_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")
