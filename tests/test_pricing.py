"""Costs of Claude Code and Codex sessions, priced as billed (agents/prices/pricing.py).

Each fixture's expected cost is written out below: its requests' token sums (each response
once: the last line of a ``message.id`` + ``requestId``, each Codex ``token_count`` once, the
input without its cached part), times the price in force on the session's day, in dollars per
million tokens. Sources: genai-prices at the version requirements.lock pins
(pydantic/genai-prices, which cites the vendors' pricing pages; each price below is the same
from 0.2.3 to 0.2.5), and xcsh_store/agents/prices/price_corrections.toml for Claude Sonnet 4's
long-context tier (Anthropic's pricing page, in force from 2025-08-12). The token sums come
from the files alone, as tests/test_agents.py computes them; a request's size for the
long-context threshold is its ``input + cache_read + cache_write`` (Codex: ``input_tokens``,
cached included).
"""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from helpers.cli_runs import run, run_json
from real_home import RealHome

from xcsh_store.agents.prices.price_file import PriceFileError
from xcsh_store.agents.prices.pricing import Request, price_table
from xcsh_store.index import SessionIndex


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's prices file lives here (``$XDG_CONFIG_HOME/xcsh-store/prices.toml``)."""
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return config


def write_prices(config: Path, text: str) -> Path:
    path = config / "xcsh-store" / "prices.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# Expected cost of each Claude Code and Codex fixture session, by session id.
EXPECTED = {
    # sheurich claude-large-conversation, 2025-09-20, claude-sonnet-4-20250514: all 170
    # requests are over 200K input tokens (about 394K each, the 1M context beta), so each is
    # billed whole at the long-context rates (corrections file): input 360 x $6 + output
    # 22,976 x $22.50 + cache read 66,925,567 x $0.60 + 5-minute cache write 2,395,354 x $7.50
    # = 0.00216 + 0.51696 + 40.1553402 + 17.965155 = $58.6396152
    "0fae0449-64d3-4788-8622-d3a47d82c14b": 58.6396152,
    # sheurich claude-long-conversation, 2025-10-08, claude-sonnet-4-5-20250929 (genai-prices,
    # no request over 200K): 2,005 x $3 + 3,675 x $15 + 4,890,806 x $0.30 + 1,129,638 x $3.75
    # = 0.006015 + 0.055125 + 1.4672418 + 4.2361425 = $5.7645243
    "9a9eadc8-c1f1-493e-a0f1-884aa996b05b": 5.7645243,
    # d-kimuson claude-code-viewer, 2025-09-03, claude-sonnet-4-20250514, none over 200K:
    # 818 x $3 + 51,933 x $15 + 3,647,854 x $0.30 + 137,976 x $3.75
    # = 0.002454 + 0.778995 + 1.0943562 + 0.51741 = $2.3932152
    "fe5e1c67-53e7-4862-81ae-d0e013e3270b": 2.3932152,
    # ikihin bhavana, 2026-06-15, claude-opus-4-6 (genai-prices: flat since 2026-03-13):
    # 129 x $5 + 55,999 x $25 + 6,410,533 x $0.50 + 342,491 x $6.25
    # = 0.000645 + 1.399975 + 3.2052665 + 2.14056875 = $6.74645525
    "dc7128ad-e5e3-4f3d-871e-d5e65a807546": 6.74645525,
    # apanloco random, 2026-04-14, claude-opus-4-6, every cache write to the 1-hour cache:
    # 42 x $5 + 6,911 x $25 + 506,652 x $0.50 + 18,495 x $10 (1h: 2x input)
    # = 0.00021 + 0.172775 + 0.253326 + 0.18495 = $0.611261
    "a263b894-c8c2-44af-8845-663362b5a201": 0.611261,
    # sheurich claude-tiny-conversation, 2025-09-19, claude-opus-4-1-20250805:
    # 14 x $15 + 3 x $75 + 76,406 x $1.50 + 483 x $18.75
    # = 0.00021 + 0.000225 + 0.114609 + 0.00905625 = $0.12410025
    "67a8478e-78dc-44ab-82ea-f65c8ead85f6": 0.12410025,
    # jkindrix claude-snatch parent and subagent, 2026-01-16, claude-opus-4-20250514:
    # 20 x $15 + 40 x $75 = $0.0033; the subagent 6 x $15 + 8 x $75 = $0.00069
    "c0ffee00-1111-2222-3333-444455556666": 0.0033,
    "agent-1111111111111111": 0.00069,
    # thejamesnick agentic-wallet: nvidia/nemotron-3-super-120b-a12b-20230311:free, an
    # OpenRouter free variant: 53,272 + 135 tokens x $0 = $0
    "01131ba6-a26e-449d-8862-cc913608c7c2": 0.0,
    # KaisaLabs octora: one <synthetic> message (Claude Code's own, no request): $0
    "2ef7e415-bb38-49ec-b1d3-8a79a365d72b": 0.0,
    # bastion-agentique: glm-4.7 (Z.ai), six responses of 0 tokens: $0
    "3065c678-2605-4707-9a03-a9c2b0cf758e": 0.0,
    # AcidicSoil codex-session-view, 2025-11-17, gpt-5.1-codex (genai-prices: gpt-5.1):
    # 71,933 x $1.25 + 22,305 x $10 + 1,027,328 x $0.125
    # = 0.08991625 + 0.22305 + 0.128416 = $0.44138225
    "019a93b9-f380-7600-98ff-940e6b99603c": 0.44138225,
    # uzaxirr raze, 2026-03-12, gpt-5.4, none over 272K:
    # 96,556 x $2.50 + 19,360 x $15 + 1,160,576 x $0.25 = 0.24139 + 0.2904 + 0.290144
    # = $0.821934
    "019ce299-7e70-7a13-9314-042ed6725303": 0.821934,
    # Shyaar beam_v1, 2026-04-21, gpt-5.4: 16,972 x $2.50 + 1,586 x $15 + 77,440 x $0.25
    # = 0.04243 + 0.02379 + 0.01936 = $0.08558
    "019daf73-6320-79a3-83a5-5421d21daf0b": 0.08558,
    # kunalcode12 Empire-of-bits-vorld, 2026-04-22, gpt-5.4: 63,626 x $2.50 + 2,478 x $15
    # + 164,608 x $0.25 = 0.159065 + 0.03717 + 0.041152 = $0.237387
    "019db6d2-08f5-7241-b14a-c07031a9859e": 0.237387,
    # AkashJana18 edgerunner, 2026-07-10 (before OpenAI's 2026-08-21 price cut), gpt-5.6-sol:
    # 146 requests up to 272K input: 1,056,617 x $5 + 89,064 x $30 + 27,038,208 x $0.50
    # = 5.283085 + 2.67192 + 13.519104 = 21.474109; 24 requests over 272K, whole at the
    # long-context rates (2x input, 1.5x output): 303,238 x $10 + 8,373 x $45 + 6,495,232 x $1
    # = 3.03238 + 0.376785 + 6.495232 = 9.904397; gpt-5.6-luna, 3 requests over 272K:
    # 286,582 x $2 + 679 x $9 + 599,296 x $0.20 = 0.573164 + 0.006111 + 0.1198592 = 0.6991342;
    # together $32.0776402
    "019f4ce9-5831-7e71-ab0a-24a9d7358aab": 32.0776402,
}


@pytest.fixture
def priced_home(real_home: RealHome, agent_dir: Path) -> Path:
    run(agent_dir, "sync", "--init", "--workers", "1")
    return agent_dir


def test_each_fixture_session_costs_what_its_requests_are_billed(priced_home: Path):
    agents = ("--agent", "claude", "--agent", "codex")
    rows = run_json(priced_home, "usage", "--by", "session", *agents)
    costs = {row["key"]: row["cost"] for row in rows["rows"]}
    assert costs == pytest.approx(EXPECTED, abs=1e-9)
    # ccusage 20.0.24 says $58.85 and $26.42 on these files: docs/ccusage.md explains each
    # difference.
    by_agent = run_json(priced_home, "usage", "--by", "agent", *agents)["rows"]
    totals = {row["key"]: round(row["cost"], 2) for row in by_agent}
    assert totals == {"claude": 74.28, "codex": 33.66}


def test_a_model_claude_code_ran_elsewhere_is_not_anthropics(priced_home: Path):
    models = {row["key"] for row in run_json(priced_home, "usage", "--by", "model")["rows"]}
    assert {
        "zhipuai/glm-4.7",
        "openrouter/nvidia/nemotron-3-super-120b-a12b-20230311:free",
        "<synthetic>",
        "anthropic/claude-opus-4-6",
    } <= models
    assert not {model for model in models if model.startswith("anthropic/")} - {
        "anthropic/claude-opus-4-6",
        "anthropic/claude-opus-4-1-20250805",
        "anthropic/claude-opus-4-20250514",
        "anthropic/claude-sonnet-4-20250514",
        "anthropic/claude-sonnet-4-5-20250929",
        # pi sessions name their own provider
        "anthropic/claude-opus-4-5",
        "anthropic/claude-sonnet-4-5",
        "anthropic/claude-opus-4-1",
        "anthropic/claude-opus",
        "anthropic/claude-fable-5:high",
        "anthropic/claude-opus-4-7",
        "anthropic/legacy-model",
    }


def request(model: str | None, **tokens: int) -> Request:
    figures = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, **tokens}
    return Request(model, "2026-06-01T00:00:00Z", **figures)  # type: ignore[arg-type]


def test_one_hour_cache_writes_cost_twice_the_input_rate():
    # claude-opus-4-6: input $5, 5-minute writes $6.25, 1-hour writes $10 (genai-prices).
    table = price_table()
    five_minutes = table.cost(request("claude-opus-4-6", cache_write=1_000_000))
    one_hour = table.cost(
        Request("claude-opus-4-6", "2026-06-01T00:00:00Z", 0, 0, 0, 1_000_000, 1_000_000)
    )
    assert (five_minutes, one_hour) == (pytest.approx(6.25), pytest.approx(10.0))


def test_over_the_threshold_the_whole_request_is_billed_at_the_long_context_rates():
    # Sonnet 4 (corrections file): $3 / $15 up to 200K input tokens, $6 / $22.50 above, for
    # the whole request; the threshold counts cache reads and writes too.
    table = price_table()
    at = table.cost(request("claude-sonnet-4-20250514", input=100_000, cache_read=100_000))
    above = table.cost(
        request("claude-sonnet-4-20250514", input=100_001, cache_read=100_000, output=1_000)
    )
    assert at == pytest.approx(100_000 * 3 / 1e6 + 100_000 * 0.3 / 1e6)
    assert above == pytest.approx(100_001 * 6 / 1e6 + 100_000 * 0.6 / 1e6 + 1_000 * 22.5 / 1e6)


def test_a_price_is_the_one_in_force_on_the_requests_day():
    # gpt-5.6-sol: $5 input until OpenAI's cut of 2026-08-21, $4 after (genai-prices).
    table = price_table()
    before = Request("gpt-5.6-sol", "2026-08-20T23:59:59Z", 100_000, 0, 0, 0, provider="openai")
    after = Request("gpt-5.6-sol", "2026-08-21T00:00:00Z", 100_000, 0, 0, 0, provider="openai")
    assert (table.cost(before), table.cost(after)) == (pytest.approx(0.5), pytest.approx(0.4))


def test_free_synthetic_and_empty_requests_cost_nothing_and_unknown_models_have_no_price():
    table = price_table()
    assert table.cost(request("meta-llama/llama-3.3-70b-instruct:free", input=10**6)) == 0
    assert table.cost(request("<synthetic>")) == 0
    assert table.cost(request("a-model-nobody-prices")) == 0  # no tokens
    assert table.cost(request("a-model-nobody-prices", input=1)) is None


def test_the_arithmetic_is_genai_prices_own():
    """Our per-request arithmetic (pricing_model.Rates.cost) against genai-prices' calc_price,
    on the fixtures' models and random requests, small and over the thresholds."""
    table = price_table()
    draw = random.Random(25)
    for model, provider in [
        ("claude-opus-4-6", "anthropic"),
        ("claude-sonnet-4-5-20250929", "anthropic"),
        ("claude-opus-4-1-20250805", "anthropic"),
        ("gpt-5.6-sol", "openai"),
        ("gpt-5.6-luna", "openai"),
        ("gpt-5.4", "openai"),
        ("gpt-5.1-codex", "openai"),
    ]:
        for _ in range(50):
            figures = [draw.choice([0, draw.randrange(10**3), draw.randrange(4 * 10**5)])
                       for _ in range(4)]  # fmt: skip
            one_hour = draw.randrange(figures[3] + 1) if provider == "anthropic" else 0
            if provider == "openai":
                figures[3] = 0
            day = "2026-01-10T00:00:00Z" if draw.random() < 0.5 else "2026-07-10T00:00:00Z"
            ours = table.cost(Request(model, day, *figures, one_hour, provider=provider))
            theirs = calc_price(
                Usage(
                    input_tokens=figures[0] + figures[2] + figures[3],
                    output_tokens=figures[1],
                    cache_read_tokens=figures[2],
                    cache_write_tokens=figures[3],
                    cache_write_1h_tokens=one_hour,
                ),
                model,
                provider_id=provider,
                genai_request_timestamp=datetime.fromisoformat(day).replace(tzinfo=UTC),
            ).total_price
            assert ours == pytest.approx(float(theirs), rel=1e-12, abs=1e-15), (model, figures)


def test_flat_rates_cost_what_rates_cost_to_the_bit():
    """Rates.flat (the lean pass's arithmetic for a price without tiers) against Rates.cost, on
    every model of the table's dataset that has no tier, for random requests."""
    table = price_table()
    draw = random.Random(40)
    flat_models = 0
    for model in ("claude-opus-4-6", "claude-opus-4-1-20250805", "claude-haiku-4-5",
                  "gpt-5.1-codex", "claude-sonnet-4-5-20250929"):  # fmt: skip
        price = table.price(model, None, datetime(2026, 1, 10, tzinfo=UTC).date())
        assert price is not None
        rates = price.rates.flat()
        if rates is None:
            continue
        flat_models += 1
        for _ in range(200):
            i, o, r, w = (draw.choice([0, draw.randrange(10**3), draw.randrange(4 * 10**5)])
                          for _ in range(4))  # fmt: skip
            h = draw.randrange(w + 1)
            flat = (i * rates[0] + o * rates[1] + r * rates[2] + (w - h) * rates[3]
                    + h * rates[4]) / 1_000_000  # fmt: skip
            assert flat == price.rates.cost(i, o, r, w, h), (model, i, o, r, w, h)
    assert flat_models >= 2


def test_a_users_prices_file_overrides_and_adds(config_home: Path):
    write_prices(
        config_home,
        '[models."claude-opus-4-6"]\ninput = 1\noutput = 2\ndate = 2026-02-01\n'
        '[models."acme-*"]\ninput = 10\noutput = 20\nprovider = "acme"\n',
    )
    table = price_table()
    assert table.cost(request("claude-opus-4-6", input=10**6, cache_read=10**6)) == 2.0
    assert table.cost(request("acme-large", output=10**6)) == 20.0
    assert table.provider_of("acme-large") == "acme"
    price = table.price("claude-opus-4-6", None, datetime.now(UTC).date())
    assert price is not None and (price.date, price.source) == (
        "2026-02-01",
        str(config_home / "xcsh-store" / "prices.toml"),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models.x\ninput = 1", "not a TOML file"),
        ('[models."x"]\ninput = 1', "output is missing"),
        ('[models."x"]\ninput = -1\noutput = 1', "must be a number of dollars"),
        ('[models."x"]\ninput = 1\noutput = 1\ninptu = 3', "unknown key 'inptu'"),
        ('[model."x"]\ninput = 1', "unknown table 'model'"),
    ],
)
def test_a_bad_prices_file_is_one_line_that_names_it(config_home: Path, text: str, message: str):
    path = write_prices(config_home, text)
    with pytest.raises(PriceFileError) as raised:
        price_table()
    assert message in str(raised.value) and str(path) in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_bad_prices_file_stops_sync_with_that_line(agent_dir: Path, config_home: Path):
    write_prices(config_home, '[models."x"]\ninput = "cheap"\noutput = 1')
    output = run(agent_dir, "sync", "--init", code=1)
    assert "prices.toml: models.x: input must be a number" in output
    assert len(output.strip().splitlines()) == 1


def test_a_changed_prices_file_reprices_the_index_at_the_next_sync(
    priced_home: Path, config_home: Path
):
    def opus_cost() -> float:
        rows = run_json(priced_home, "usage", "--by", "model", "--agent", "claude")["rows"]
        return next(row["cost"] for row in rows if row["key"] == "anthropic/claude-opus-4-6")

    opus_sessions = ("dc7128ad-e5e3-4f3d-871e-d5e65a807546", "a263b894-c8c2-44af-8845-663362b5a201")
    assert opus_cost() == pytest.approx(sum(EXPECTED[session] for session in opus_sessions))
    write_prices(config_home, '[models."claude-opus-4-6"]\ninput = 0\noutput = 1\n')
    assert "priced again" in run(priced_home, "sync")
    # Output only, at $1: 55,999 + 6,911 tokens; cache reads and writes at the input rate, $0.
    assert opus_cost() == pytest.approx((55_999 + 6_911) / 1e6)
    with SessionIndex.open(str(priced_home), read_only=True) as index:
        (sessions,) = index.connection.execute(
            "SELECT total(cost) FROM sessions WHERE session_id = ?",
            ("dc7128ad-e5e3-4f3d-871e-d5e65a807546",),
        ).fetchall()[0]
    assert sessions == pytest.approx(55_999 / 1e6)
    # And nothing to do the next time.
    assert "priced again" not in run(priced_home, "sync")
    assert os.environ["XDG_CONFIG_HOME"] == str(config_home)


def test_prices_lists_each_model_its_price_source_and_the_unpriced(
    priced_home: Path, config_home: Path
):
    prices = run_json(priced_home, "prices")
    by_model = {(item["agent"], item["model"]): item for item in prices["models"]}
    opus = by_model[("claude", "claude-opus-4-6")]
    source = f"genai-prices {metadata.version('genai-prices')}"
    assert (opus["price"]["input"]["base"], opus["source"]) == (5.0, source)
    assert opus["date"] == "2026-03-13"  # the day its long-context tier ended (dataset)
    sonnet = by_model[("claude", "claude-sonnet-4-20250514")]
    assert sonnet["price"]["input"]["tiers"] == [[200000, 6.0]]
    assert sonnet["source"] == "Anthropic pricing (long context)"
    # An oh-my-pi line without a cost, of a model no source prices (issue 35: unknown, not $0).
    assert prices["unpriced"] == ["claude-fable-5:high"] and prices["index_priced_with_it"]
    write_prices(config_home, '[models."claude-opus-4-6"]\ninput = 1\noutput = 2\n')
    assert "priced with another price table" in run(priced_home, "prices")
