"""The price table kept on disk (agents/prices/flat_table.py, price_cache.py): the same price as
genai-prices' own lookup for every model of the dataset, its dataset part from the table shipped
with the package (the locked version's, checked against the dataset installed), built once in
the user's cache folder and read back by the next process (and the next store) without importing
genai-prices or pydantic, built again when a source changes or the file is damaged, and a
`usage` that prices a new line imports neither."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from genai_prices.data_snapshot import get_snapshot
from helpers.cli_runs import run
from real_home import RealHome

from xcsh_store.agents.prices import flat_table, price_cache
from xcsh_store.agents.prices.flat_table import DatasetPrices, flatten
from xcsh_store.agents.prices.pricing import Request, fixed_prices, price_table

DAYS = (date(2024, 3, 1), date(2025, 9, 20), date(2026, 12, 31))


def genai_price(model: str, provider: str | None, day: date) -> tuple[str, object] | None:
    """(provider, prices) as genai-prices finds them: the reference the flat table follows."""
    snapshot = get_snapshot()
    hints: list[str | None] = [provider] if provider else []
    hints += [None, "openrouter"] if "/" in model else [None]
    for hint in hints:
        try:
            served_by, info = snapshot.find_provider_model(model, None, hint, None)
        except LookupError:
            continue
        return served_by.id, info.get_prices(datetime(day.year, day.month, day.day, tzinfo=UTC))
    return None


def names_of(logic: object) -> list[str]:
    """The model names a match clause names (its equals and starts_with texts)."""
    if hasattr(logic, "or_") or hasattr(logic, "and_"):
        parts = getattr(logic, "or_", None) or getattr(logic, "and_", [])
        return [name for part in parts for name in names_of(part)]
    text = getattr(logic, "equals", None) or getattr(logic, "starts_with", None)
    return [text] if text else []


def every_name() -> list[tuple[str, str | None]]:
    """(model name, provider hint): each model of the dataset by each name it is matched by,
    without a provider and with its own, and the forms agents write (vendor/model, a compact
    date, an unknown model)."""
    found = set()
    for provider in get_snapshot().providers:
        for model in provider.models:
            for name in {model.id, *names_of(model.match)}:
                found |= {(name.lower(), None), (name.lower(), provider.id)}
    found |= {
        ("anthropic/claude-sonnet-4", None),
        ("gpt-5.2-20251211", None),
        ("claude-sonnet-4-20250514", "litellm"),
        ("anthropic/claude-3-5-haiku-20241022", "litellm"),
        ("no-such-model-anywhere", None),
        ("claude-opus-4-6", "google"),
    }
    return sorted(found, key=lambda pair: (pair[0], pair[1] or ""))


def test_every_model_of_the_dataset_has_genai_prices_own_price():
    flat = DatasetPrices(json.loads(json.dumps(flatten())))
    names = every_name()
    assert len(names) > 2000
    kinds = ("input", "output", "cache_read", "cache_write")
    for model, provider in names:
        for day in DAYS:
            ours, theirs = flat.price(model, provider, day), genai_price(model, provider, day)
            if theirs is None:
                assert ours is None, (model, provider, day)
                continue
            assert ours is not None, (model, provider, day)
            served_by, prices = theirs
            assert ours.provider == served_by, (model, provider, day)
            for kind in kinds:
                rate, price = getattr(ours.rates, kind), getattr(prices, f"{kind}_mtok")
                if price is None:
                    assert rate is None, (model, provider, day, kind)
                    continue
                tiers = getattr(price, "tiers", None)
                base = float(price.base) if tiers is not None else float(price)
                assert rate.base == base, (model, provider, day, kind)
                expected = tuple((t.start, float(t.price)) for t in tiers or ())
                assert rate.tiers == expected, (model, provider, day, kind)


def _price_in_new_process(code: str = "", shipped: Path | None = None) -> list[str]:
    """Price a request of a model the dataset prices (and run ``code``) in a new process, with
    the test's cache folder: which of genai-prices, pydantic and httpx it imported. ``shipped``:
    the table shipped with the package taken from there instead (a path where there is none:
    the dataset installed is not the one the package ships)."""
    script = (
        "import sys, json\n"
        "from xcsh_store.agents.prices import flat_table\n"
        "from xcsh_store.agents.prices.pricing import Request, fixed_prices, price_table\n"
        f"flat_table.SHIPPED = {str(shipped) if shipped else None!r} or flat_table.SHIPPED\n"
        "with fixed_prices():\n"
        "    cost = price_table().cost(Request('claude-opus-4-6', '2026-02-01T10:00:00Z',"
        " 10, 10, 0, 0))\n"
        f"    {code or 'pass'}\n"
        "print(json.dumps(sorted({'genai_prices', 'pydantic', 'httpx'} & set(sys.modules))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(result.stdout.splitlines()[-1])


DATASET_IMPORTED = ["genai_prices", "pydantic"]


def test_a_first_run_takes_the_dataset_from_the_shipped_table(tmp_path: Path):
    """The dataset installed is the one requirements.lock pins: no process imports it, not even
    the first one, which keeps the table in the user's cache folder."""
    assert not Path(price_cache.cache_path()).exists()
    assert _price_in_new_process() == []
    assert Path(price_cache.cache_path()).is_file()


def test_another_dataset_than_the_shipped_one_is_flattened(tmp_path: Path):
    shipped = json.loads(Path(flat_table.SHIPPED).read_bytes())
    other = tmp_path / "other-data.json"
    other.write_text(json.dumps({**shipped, "data_sha256": "0" * 64}))
    assert _price_in_new_process(shipped=other) == DATASET_IMPORTED
    Path(price_cache.cache_path()).unlink()
    other.write_text(json.dumps({**shipped, "version": "0.0.1"}))
    assert _price_in_new_process(shipped=other) == DATASET_IMPORTED


def test_the_table_is_built_once_and_read_back_without_the_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    none = tmp_path / "none.json"
    assert _price_in_new_process(shipped=none) == DATASET_IMPORTED
    assert Path(price_cache.cache_path()).is_file()
    assert _price_in_new_process(shipped=none) == []
    # Without a folder to keep it in (the cache folder's place is a file), each process builds
    # its own.
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))
    assert _price_in_new_process(shipped=none) == DATASET_IMPORTED
    assert _price_in_new_process(shipped=none) == DATASET_IMPORTED


def test_a_damaged_table_is_built_again(tmp_path: Path):
    path = Path(price_cache.cache_path())
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"key": ')
    none = tmp_path / "none.json"
    assert _price_in_new_process(shipped=none) == DATASET_IMPORTED
    assert _price_in_new_process(shipped=none) == []


def test_a_table_of_the_right_key_but_another_shape_is_built_again(tmp_path: Path):
    none = tmp_path / "none.json"
    _price_in_new_process(shipped=none)
    path = Path(price_cache.cache_path())
    data = json.loads(path.read_bytes())
    del data["dataset"]["providers"][0]["models"][0]["match"]
    path.write_text(json.dumps(data))
    assert _price_in_new_process(shipped=none) == DATASET_IMPORTED
    assert _price_in_new_process(shipped=none) == []


def test_an_edited_prices_file_is_a_new_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    opus = Request("claude-opus-4-6", "2026-02-01T10:00:00Z", 1_000_000, 0, 0, 0)
    with fixed_prices():
        dataset_cost = price_table().cost(opus)
    prices = tmp_path / "config" / "xcsh-store" / "prices.toml"
    prices.parent.mkdir(parents=True)
    prices.write_text('[models."claude-opus-4-6"]\ninput = 1\noutput = 2\n')
    with fixed_prices():
        assert price_table().cost(opus) == 1.0 != dataset_cost
    # The next process reads the file's table from disk, without the dataset.
    none = tmp_path / "none.json"
    assert _price_in_new_process("assert cost == 30 / 1e6", shipped=none) == []


def _locked_version() -> str:
    lock = Path(__file__).resolve().parents[1] / "requirements.lock"
    pins = dict(line.split("==", 1) for line in lock.read_text().splitlines() if "==" in line)
    return pins[flat_table.DATASET].strip()


def test_the_shipped_table_is_the_locked_dataset():
    """The table shipped with the package is the dataset of the genai-prices version
    requirements.lock pins. Stale (a new pin): `python -m xcsh_store.agents.prices.flat_table`
    with that version installed writes it again."""
    shipped = json.loads(Path(flat_table.SHIPPED).read_bytes())
    again = "python -m xcsh_store.agents.prices.flat_table writes it again"
    assert shipped["version"] == _locked_version(), f"the shipped table is stale: {again}"
    if flat_table.dataset_version() != _locked_version():
        pytest.skip(f"{flat_table.DATASET} {_locked_version()} is not the version installed")
    assert shipped == json.loads(json.dumps(flat_table.shipped_table())), again


def _verb_in_new_process(agent_dir: Path, *arguments: str) -> tuple[str, list[str]]:
    """A verb of the CLI over ``agent_dir`` in a new process: what it printed, and which of
    genai-prices, pydantic and httpx it imported."""
    script = (
        "import sys, json\nfrom xcsh_store.cli import cli\n"
        "try:\n"
        f"    cli(['--agent-dir', {str(agent_dir)!r}, *{list(arguments)!r}])\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted({'genai_prices', 'pydantic', 'httpx'} & set(sys.modules))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    printed, _, imported = result.stdout.rstrip("\n").rpartition("\n")
    return printed, json.loads(imported)


def _claude_usage(agent_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """`usage --by agent --agent claude` in a new process: Claude's row, and which of
    genai-prices, pydantic and httpx it imported."""
    usage, imported = _verb_in_new_process(
        agent_dir, "usage", "--by", "agent", "--agent", "claude", "--json"
    )
    (row,) = json.loads(usage)["rows"]
    return row, imported


def test_usage_that_prices_a_new_line_imports_neither_genai_prices_nor_pydantic(
    real_home: RealHome, agent_dir: Path
):
    run(agent_dir, "sync", "--init", "--workers", "1")
    # Kept in the user's cache folder, not beside index.db.
    assert Path(price_cache.cache_path()).is_file()
    assert not (agent_dir / price_cache.CACHE_NAME).exists()
    before, _ = _claude_usage(agent_dir)
    session = max(real_home.claude_dir.rglob("*.jsonl"), key=lambda path: path.stat().st_size)
    last = json.loads(session.read_text().splitlines()[-1])
    line = {
        **last,
        "uuid": "0c8ba4a5-3b41-4bd5-9b0a-4e5d1f0f7a11",
        "parentUuid": last.get("uuid"),
        "type": "assistant",
        "timestamp": "2026-02-01T10:00:00.000Z",
        "requestId": "req_flat_table_test",
        "message": {
            "id": "msg_flat_table_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "one more answer"}],
            "usage": {"input_tokens": 1000, "output_tokens": 100},
        },
    }
    with session.open("a") as stream:
        stream.write(json.dumps(line) + "\n")
    after, imported = _claude_usage(agent_dir)
    # The appended line was read and priced (in that process), and nothing imported the dataset.
    added = price_table().cost(Request("claude-opus-4-6", line["timestamp"], 1000, 100, 0, 0))
    assert added is not None and added > 0
    assert (after["input_tokens"], after["output_tokens"]) == (
        before["input_tokens"] + 1000,
        before["output_tokens"] + 100,
    )
    assert after["cost"] == pytest.approx(before["cost"] + added)
    assert imported == []


def test_a_search_whose_hits_are_read_through_their_reader_imports_no_dataset(
    real_home: RealHome, agent_dir: Path
):
    """A hit's text is read again through its agent's reader, which prices its line: with the
    table kept in the user's cache folder, from disk (a search had spent 38 % of its second
    building the table from genai-prices)."""
    run(agent_dir, "sync", "--init", "--workers", "1")
    hits, imported = _verb_in_new_process(
        agent_dir, "search", "packages", "--agent", "claude", "--json"
    )
    assert any(hit["snippet"] for hit in json.loads(hits))
    assert imported == []


def test_a_sync_that_prices_nothing_builds_no_table(agent_dir: Path):
    """The fingerprint the index records is the files' digest and the dataset's version: a
    first sync with nothing to price reads neither the dataset nor writes a table."""
    assert _verb_in_new_process(agent_dir, "sync", "--init")[1] == []
    assert (agent_dir / "index.db").is_file()
    assert not Path(price_cache.cache_path()).exists()


def test_another_store_reads_the_table_the_first_one_kept(real_home: RealHome, agent_dir: Path):
    """The table is the user's: a second agent dir's first sync (a fresh index folder) prices
    with the table the first one kept, without writing it again."""
    run(agent_dir, "sync", "--init", "--workers", "1")
    kept = Path(price_cache.cache_path()).stat()
    other = agent_dir.parent / "other-agent"
    run(other, "sync", "--init", "--workers", "1")
    assert run(other, "usage", "--by", "agent") == run(agent_dir, "usage", "--by", "agent")
    again = Path(price_cache.cache_path()).stat()
    assert (again.st_ino, again.st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)
