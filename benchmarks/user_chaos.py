"""The stress run's "user chaos" phase: what a user does to session folders behind the store's
back while syncs and `gc --apply --grace 0` run, then a check that no referenced blob is gone.

    python benchmarks/stress.py --only chaos --chaos-seconds 600

Processes at once, for the given time: a sync loop, a GC loop (grace 0, apply), and one process
each that moves session files between project folders (symlinked ones too), renames project
folders, breaks and restores symlinked project folders (their target renamed away and back:
an unmounted disk), appends lines in split writes, and rewrites files (a temp file renamed
over; some rewrites drop an image line, so its blob becomes garbage). Each alternates storms
(an operation every few ms) and calm spells. Appends and rewrites never add a reference: with
grace 0 only a reference that already existed is protected, which is what is checked.

At the end, with everything restored, every blob referenced by any session file must still be
there, before and after a last collection.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from xcsh_store.format.blobs import BlobStore
from xcsh_store.index import SessionIndex
from xcsh_store.index.model.facts import blob_refs_in

PROJECTS = 40
LINKED = 4
SESSIONS = 80
ORPHANS = 60
CHAOS_ROLES = ("mover", "renamer", "flipper", "appender", "rewriter")
OLD = time.time() - 3 * 86400


def _line(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def prepare(agent: Path, work: Path, seed: int) -> None:
    """Project folders (some symlinked to folders outside), sessions with old images, and old
    unreferenced blobs for the GC to find."""
    chance = random.Random(seed)
    sessions = agent / "sessions"
    folders = []
    for number in range(PROJECTS):
        folder = sessions / f"--p{number:02d}--"
        folder.mkdir(parents=True)
        folders.append(folder)
    for number in range(LINKED):
        target = work / "disks" / f"disk{number}"
        target.mkdir(parents=True)
        link = sessions / f"--linked{number}--"
        link.symlink_to(target)
        folders.append(link)
    store = BlobStore(str(agent / "blobs"))
    for number in range(SESSIONS):
        lines = [
            _line({"type": "session", "version": 3, "id": f"chaos{number}",
                   "timestamp": "2026-01-01T00:00:00.000Z", "cwd": f"/work/p{number}"})
        ]  # fmt: skip
        parent = None
        for image in range(chance.randint(1, 3)):
            put = store.put(f"image {image} of session {number}".encode() * 40)
            os.utime(put.path, (OLD, OLD))
            entry_id = f"{number:04d}{image:04d}"
            lines.append(_line({
                "type": "message", "id": entry_id, "parentId": parent,
                "timestamp": "2026-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": [
                    {"type": "text", "text": f"look at {image}"},
                    {"type": "image", "data": put.ref, "mimeType": "image/png"}]},
            }))  # fmt: skip
            parent = entry_id
        chance.choice(folders).joinpath(f"s{number:03d}.jsonl").write_bytes(b"".join(lines))
    for number in range(ORPHANS):
        os.utime(store.put(f"orphan {number}".encode() * 40).path, (OLD, OLD))


def session_files(agent: Path) -> list[Path]:
    return [path for path in (agent / "sessions").glob("*/*.jsonl") if path.is_file()]


# --------------------------------------------------------------------------------------------
# The processes


def _storms(seconds: float, seed: int):
    """Yields a random generator before each operation; storms of ops a few ms apart, then calm."""
    chance = random.Random(seed)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        storm_end = time.monotonic() + chance.uniform(0.2, 1.5)
        while time.monotonic() < min(storm_end, end):
            yield chance
            time.sleep(chance.uniform(0, 0.004))
        time.sleep(chance.uniform(0.1, 1.5))


def _move(agent: Path, chance: random.Random) -> bool:
    files = session_files(agent)
    folders = [path for path in (agent / "sessions").iterdir() if path.is_dir()]
    if not files or not folders:
        return False
    source = chance.choice(files)
    # mv without overwriting (a link, then the old name goes): a move onto a copy of the
    # same session would destroy that copy, and a rewrite that had read it before would then
    # bring back refs to blobs that were garbage meanwhile (no store can guard that).
    os.link(source, chance.choice(folders) / source.name)
    os.unlink(source)
    return True


def _rename(agent: Path, chance: random.Random) -> bool:
    folders = [
        path for path in (agent / "sessions").iterdir() if path.is_dir() and not path.is_symlink()
    ]
    if not folders:
        return False
    folder = chance.choice(folders)
    os.rename(folder, folder.with_name(f"--p{chance.randrange(10**6):06d}--"))
    return True


def _flip(agent: Path, work: Path, chance: random.Random) -> bool:
    """Break a symlinked project folder (its target renamed away), then restore it."""
    disk = work / "disks" / f"disk{chance.randrange(LINKED)}"
    away = disk.with_name(disk.name + ".unmounted")
    os.rename(disk, away)
    time.sleep(chance.uniform(0.005, 0.2))
    os.rename(away, disk)
    return True


def _append(agent: Path, chance: random.Random) -> bool:
    """A text line written in two or three pieces, as a slow writer's line would be."""
    files = session_files(agent)
    if not files:
        return False
    line = _line({
        "type": "message", "id": f"a{chance.randrange(16**8):08x}", "parentId": None,
        "timestamp": "2026-01-01T00:00:02.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "more " * 20}]},
    })  # fmt: skip
    cuts = sorted(chance.sample(range(1, len(line) - 1), chance.randint(1, 2)))
    with open(chance.choice(files), "ab") as handle:
        for start, end in zip([0, *cuts], [*cuts, len(line)], strict=True):
            handle.write(line[start:end])
            handle.flush()
            time.sleep(chance.uniform(0, 0.01))
    return True


def _rewrite(agent: Path, chance: random.Random) -> bool:
    """Replace a file whole (temp file renamed over it); one time in four without one of its
    image lines, whose blob is then garbage."""
    files = session_files(agent)
    if not files:
        return False
    path = chance.choice(files)
    lines = path.read_bytes().splitlines(keepends=True)
    images = [number for number, line in enumerate(lines) if b"blob:sha256:" in line]
    if len(images) > 1 and chance.random() < 0.25:
        del lines[chance.choice(images)]
    temp = path.with_name(f".{path.name}.{chance.randrange(16**16):016x}.tmp")
    temp.write_bytes(b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines))
    os.replace(temp, path)
    return True


def run_role(role: str, agent: Path, work: Path, seconds: float, seed: int) -> dict[str, int]:
    """One process of the phase; returns its counts."""
    if role == "sync":
        return _sync_loop(agent, seconds)
    if role == "gc":
        return _gc_loop(agent, seconds)
    operation = {
        "mover": lambda chance: _move(agent, chance),
        "renamer": lambda chance: _rename(agent, chance),
        "flipper": lambda chance: _flip(agent, work, chance),
        "appender": lambda chance: _append(agent, chance),
        "rewriter": lambda chance: _rewrite(agent, chance),
    }[role]
    done = failed = 0
    for chance in _storms(seconds, seed):
        try:
            done += operation(chance)
        except OSError:
            failed += 1  # raced with another process (a file moved away, a folder renamed)
    return {"done": done, "raced": failed}


def _sync_loop(agent: Path, seconds: float) -> dict[str, int]:
    end, syncs = time.monotonic() + seconds, 0
    with SessionIndex.open(str(agent)) as index:
        while time.monotonic() < end:
            index.sync()
            syncs += 1
    return {"done": syncs}


def _gc_loop(agent: Path, seconds: float) -> dict[str, int]:
    end = time.monotonic() + seconds
    counts = {"done": 0, "applied": 0, "refused_unreachable": 0, "refused_moving": 0, "deleted": 0}
    with SessionIndex.open(str(agent)) as index:
        while time.monotonic() < end:
            report = index.blob_gc(apply=True, grace=timedelta(0))
            counts["done"] += 1
            counts["deleted"] += len(report.deleted)
            if report.applied:
                counts["applied"] += 1
            elif report.refused and "moving" in report.refused:
                counts["refused_moving"] += 1
            else:
                counts["refused_unreachable"] += 1
    return counts


# --------------------------------------------------------------------------------------------
# The phase


def referenced_but_missing(agent: Path) -> tuple[int, list[str]]:
    """(refs found in all session files, the referenced blobs that are not in blobs/)."""
    store = BlobStore(str(agent / "blobs"))
    refs: set[str] = set()
    for path in session_files(agent):
        for line in path.read_bytes().splitlines():
            with contextlib.suppress(ValueError):
                refs |= blob_refs_in(line)
    return len(refs), sorted(digest for digest in refs if not store.has(digest))


def run_chaos(
    agent: Path, work: Path, seconds: float, seed: int = 1, chaos: tuple[str, ...] = CHAOS_ROLES
) -> dict[str, int]:
    """The whole phase (with the ``chaos`` processes given); raises AssertionError when a
    referenced blob went missing."""
    prepare(agent, work, seed)
    roles = ("sync", "gc", *chaos)
    processes = {
        role: subprocess.Popen(
            [sys.executable, __file__, role, str(agent), str(work), str(seconds), str(seed + n)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n, role in enumerate(roles)
    }
    counts: dict[str, dict[str, int]] = {}
    for role, process in processes.items():
        out, _ = process.communicate(timeout=seconds + 600)
        if process.returncode != 0:
            raise AssertionError(f"the {role} process failed (exit code {process.returncode})")
        counts[role] = json.loads(out)
    for role in CHAOS_ROLES:
        counts.setdefault(role, {"done": 0})
    for away in (work / "disks").glob("*.unmounted"):
        os.rename(away, away.with_name(away.name.removesuffix(".unmounted")))
    _, missing = referenced_but_missing(agent)
    if missing:
        raise AssertionError(f"{len(missing)} referenced blob(s) deleted: {missing[:5]}")
    with SessionIndex.open(str(agent)) as index:
        last = index.blob_gc(apply=True, grace=timedelta(0))
    refs_after, missing = referenced_but_missing(agent)
    if missing or last.refused:
        raise AssertionError(f"after a last gc: {missing[:5]} missing; refused: {last.refused}")
    gc = counts["gc"]
    return {
        "operations": sum(part["done"] for part in counts.values()),
        "moves": counts["mover"]["done"],
        "renames": counts["renamer"]["done"],
        "symlink_flips": counts["flipper"]["done"],
        "appends": counts["appender"]["done"],
        "rewrites": counts["rewriter"]["done"],
        "raced": sum(part.get("raced", 0) for part in counts.values()),
        "syncs": counts["sync"]["done"],
        "gc_runs": gc["done"],
        "gc_applied": gc["applied"],
        "gc_refused_moving": gc["refused_moving"],
        "gc_refused_unreachable": gc["refused_unreachable"],
        "blobs_deleted": gc["deleted"] + len(last.deleted),
        "refs_checked": refs_after,
        "referenced_lost": 0,
    }


if __name__ == "__main__":
    role, agent_arg, work_arg, seconds_arg, seed_arg = sys.argv[1:6]
    result = run_role(role, Path(agent_arg), Path(work_arg), float(seconds_arg), int(seed_arg))
    print(json.dumps(result))
