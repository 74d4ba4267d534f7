"""The Hypothesis profiles (fuzzing.py): the suite draws the same examples on every run; the
stress profile draws more, and new ones."""

from __future__ import annotations

import pytest
from fuzzing import FUZZ_SCALE_ENV, PROFILE_ENV, STRESS_SCALE, examples, profile
from hypothesis import given, settings
from hypothesis import strategies as st


def _drawn(test_settings: settings) -> list[int]:
    drawn: list[int] = []

    @test_settings
    @given(st.integers())
    def draw(value: int) -> None:
        drawn.append(value)

    draw()
    return drawn


def test_a_property_test_draws_the_same_examples_on_every_run():
    ci = settings.get_profile("ci")
    first, second = _drawn(settings(ci)), _drawn(settings(ci))
    assert first == second
    assert len(set(first)) > 10


def test_the_stress_profile_draws_new_examples_on_every_run():
    stress = settings.get_profile("stress")
    assert _drawn(settings(stress, max_examples=50)) != _drawn(settings(stress, max_examples=50))


def test_the_suite_runs_the_ci_profile_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    assert profile() == "ci"
    assert settings.get_profile("ci").derandomize


def test_the_stress_profile_multiplies_every_count(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(PROFILE_ENV, "stress")
    monkeypatch.delenv(FUZZ_SCALE_ENV, raising=False)
    assert examples(25) == 25 * STRESS_SCALE
    monkeypatch.setenv(FUZZ_SCALE_ENV, "3")
    assert examples(25) == 75


def test_an_unknown_profile_is_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(PROFILE_ENV, "fast")
    with pytest.raises(ValueError, match="the profiles are ci, stress"):
        profile()
