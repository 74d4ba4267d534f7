"""The plugins' entry points kept in the user's cache folder (agents/entry_points.py): a second
process finds the same plugins without importlib.metadata, and one installed, changed or removed
since (a distribution in a folder of sys.path, its entry_points.txt rewritten in place) is seen
at once; a damaged cache file is made again. Real distributions on the path of real
subprocesses, as tests/test_agent_plugins.py installs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xcsh_store.agents.entry_points import CACHE_NAME, load

PLUGIN = Path(__file__).parent / "agent_plugin" / "chat_kinds.py"
# Prints the agents found, and whether importlib.metadata had to be imported to find them.
_CHILD = """
import json, sys
from xcsh_store.agents.registry import agents
names = [agent.name for agent in agents()]
print(json.dumps({"names": names, "metadata": "importlib.metadata" in sys.modules}))
"""


def _distribution(site: Path, name: str, entry_points: str) -> Path:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[xcsh_store.agents]\n{entry_points}")
    return info


@pytest.fixture
def site(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    shutil.copyfile(PLUGIN, folder / "chat_kinds.py")
    _distribution(folder, "xcsh_docchat", "docchat = chat_kinds:DOCCHAT\n")
    return folder


def _found(site: Path, cache: Path) -> dict[str, object]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(Path(__file__).resolve().parents[1])]),
        "XDG_CACHE_HOME": str(cache),
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_a_second_process_finds_the_plugins_without_importlib_metadata(site, tmp_path):
    first = _found(site, tmp_path / "cache")
    second = _found(site, tmp_path / "cache")
    assert "docchat" in first["names"] and "claude" in first["names"]  # type: ignore[operator]
    assert first["metadata"] is True
    assert second == {"names": first["names"], "metadata": False}


def test_a_distribution_installed_beside_the_others_is_found(site, tmp_path):
    assert "mdchat" not in _found(site, tmp_path / "cache")["names"]  # type: ignore[operator]
    _distribution(site, "xcsh_mdchat", "mdchat = chat_kinds:MDCHAT\n")
    assert "mdchat" in _found(site, tmp_path / "cache")["names"]  # type: ignore[operator]


def test_a_distribution_removed_is_gone(site, tmp_path):
    info = _distribution(site, "xcsh_mdchat", "mdchat = chat_kinds:MDCHAT\n")
    assert "mdchat" in _found(site, tmp_path / "cache")["names"]  # type: ignore[operator]
    shutil.rmtree(info)
    assert "mdchat" not in _found(site, tmp_path / "cache")["names"]  # type: ignore[operator]


def test_entry_points_rewritten_in_place_are_read_again(site, tmp_path):
    assert "treechat" not in _found(site, tmp_path / "cache")["names"]  # type: ignore[operator]
    (site / "xcsh_docchat-1.0.dist-info" / "entry_points.txt").write_text(
        "[xcsh_store.agents]\ndocchat = chat_kinds:DOCCHAT\ntreechat = chat_kinds:TREECHAT\n"
    )
    found = _found(site, tmp_path / "cache")
    assert {"docchat", "treechat"} <= set(found["names"])  # type: ignore[call-overload]
    assert found["metadata"] is True


@pytest.mark.parametrize("damage", [b"{not json", b'{"key": 1}', b"[]", b""])
def test_a_damaged_cache_file_is_made_again(site, tmp_path, damage: bytes):
    cache = tmp_path / "cache"
    expected = _found(site, cache)["names"]
    kept = cache / "xcsh-store" / CACHE_NAME
    assert kept.is_file()
    kept.write_bytes(damage)
    assert _found(site, cache) == {"names": expected, "metadata": True}
    assert _found(site, cache) == {"names": expected, "metadata": False}


def test_an_entry_point_value_loads_as_importlib_metadata_loads_it():
    import importlib.metadata

    for value in ("os.path:join", "os:path.join", "os.path : join [extra]", "os.path"):
        point = importlib.metadata.EntryPoint(name="x", value=value, group="g")
        assert load(value) is point.load()
    with pytest.raises(ValueError, match="not module:attribute"):
        load("not a value")
    with pytest.raises(AttributeError):
        load("os:no_such_name")
