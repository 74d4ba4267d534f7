"""requirements.lock: the exact versions the quick start and the tests install (pip's ``-c``).

A range in pyproject.toml lets the registry decide what a fresh clone gets; the lock decides it
instead, so that a new release of a dependency (a price table, a linter) cannot fail the suite on
one machine and pass it on another. These tests hold the lock to pyproject.toml, and what is
installed to the lock.
"""

from __future__ import annotations

import os
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def project_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        listed.extend(extra)
    return [Requirement(text) for text in listed]


def locked_versions() -> dict[str, Version]:
    """Each package the lock pins for this interpreter and platform, by canonical name."""
    environment = default_environment()
    pins: dict[str, Version] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if not line or line[0] in "# ":
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            (specifier,) = requirement.specifier
            pins[canonicalize_name(requirement.name)] = Version(specifier.version)
    return pins


def test_the_lock_pins_every_requirement_within_its_range():
    pins = locked_versions()
    outside = [
        f"{requirement} (locked: {pins.get(canonicalize_name(requirement.name), 'nothing')})"
        for requirement in project_requirements()
        if pins.get(canonicalize_name(requirement.name)) not in requirement.specifier
    ]
    assert outside == [], "regenerate requirements.lock (docs/install.md says how)"


@pytest.mark.skipif(
    os.environ.get("XCSH_STORE_UNLOCKED") == "1",
    reason="XCSH_STORE_UNLOCKED=1: installed with the newest allowed versions, not the lock",
)
def test_the_installed_versions_are_the_locked_ones():
    pins = locked_versions()
    installed = {
        canonicalize_name(distribution.metadata["Name"]): Version(distribution.version)
        for distribution in metadata.distributions()
    }
    differing = {
        name: f"{installed[name]} installed, {pin} locked"
        for name, pin in pins.items()
        if name in installed and installed[name] != pin
    }
    assert differing == {}, "install with: pip install -c requirements.lock '.[test]'"
