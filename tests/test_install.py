"""Packaging: ``pip install`` of the source into a fresh virtual environment gives a working
``xcsh-store`` (entry point, shipped SQL migrations, demo, search), run as real processes."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import tomllib
import venv
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1]


def _copy_source(target: Path) -> Path:
    """The files a source distribution holds, so the build never writes into the checkout."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(SOURCE / name, target / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("xcsh_store", "migrations"):
        shutil.copytree(SOURCE / folder, target / folder, ignore=ignore)
    return target


@pytest.mark.slow
def test_pip_install_gives_a_working_command(tmp_path):
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    python = environment / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # The dependencies come from the environment running the tests, never from the network.
    Path(purelib, "parent-environment.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
         "--no-build-isolation", str(_copy_source(tmp_path / "source"))],
        capture_output=True, text=True,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    command = environment / "bin" / "xcsh-store"
    work = tmp_path / "work"
    work.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("XCSH_AGENT_DIR", "PYTHONPATH", "NO_COLOR")
    }
    env["HOME"] = str(tmp_path / "home")

    def run(*args: str) -> str:
        finished = subprocess.run(
            [command, *args], cwd=work, env=env, capture_output=True, text=True, timeout=60
        )
        assert finished.returncode == 0, finished.stderr
        return finished.stdout

    tour = run("demo")
    assert "$ xcsh-store --agent-dir xcsh-store-demo ls" in tour
    assert (work / "xcsh-store-demo" / "index.db").exists()
    hits = json.loads(run("--agent-dir", "xcsh-store-demo", "search", "session cookie", "--json"))
    assert hits and all("«cookie»" in hit["snippet"] for hit in hits)
    assert not (tmp_path / "home" / ".xcsh").exists()
    # The installed command runs the installed package, not the checkout's.
    origin = subprocess.run(
        [python, "-c", "import xcsh_store; print(xcsh_store.__file__)"],
        cwd=work, env=env, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert origin.startswith(str(environment)), origin
    # With the prices' dataset shipped flat (agents/prices/flat_table.py SHIPPED).
    shipped = subprocess.run(
        [python, "-c", "import xcsh_store.agents.prices.flat_table as f; print(f.SHIPPED)"],
        cwd=work, env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert shipped.startswith(str(environment)) and Path(shipped).is_file(), shipped


def test_every_package_of_the_source_is_listed_for_the_wheel():
    # pyproject.toml names the packages (the migrations live outside the tree): a folder left off
    # the list installs without its modules, which only an installed run finds out.
    listed = set(
        tomllib.loads((SOURCE / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(SOURCE).parts)
        for init in (SOURCE / "xcsh_store").rglob("__init__.py")
    }
    assert listed == found | {"xcsh_store.migrations"}
