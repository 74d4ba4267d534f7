"""The scale point (issue 40, item 6): a Claude Code home of 1, 3 and 10 GB, what the index
costs there and how each figure grows with the bytes.

    python -m benchmarks.bench_scale --data /work/scale-data            # 1GB,3GB,10GB
    python -m benchmarks.bench_scale --sizes 1GB,10GB --repeat 3 --rounds 2
    python -m benchmarks.bench_scale --replot benchmarks/scale.json     # tables + plot again
    python -m benchmarks.bench_scale --quick                            # 20MB,60MB smoke run

The homes (benchmarks/scale_tree.py: generated Claude Code transcripts, one in ten a real
fixture file under new ids; the smaller homes are hard links of the start of the largest) are
written once under ``--data`` (default ``$XCSH_BENCH_DATA`` or ``benchmarks/.data``; 10 GB
needs 10 GB free there, and about 3.5 GB more for the index while it runs) and reused; the
indexes go under ``<data>/scale-work`` and are removed at the end (``--keep`` keeps them).
Smallest size first, each step a fresh process of this tree (benchmarks/index_steps.py for the
library's calls, clocks started after imports; the CLI as a whole process, as a user runs it):

* first sync: ``SessionIndex.sync()`` (default workers, search text included) into an empty
  index; wall time, MB/s, and peak RSS: of the main process (the writer), of the largest worker,
  and the largest sum of the RSS of every process of the sync, sampled every 0.2 s;
* index.db on disk;
* no-change sync: open + ``sync()`` in a fresh process (library; the clock after imports), and
  ``xcsh-store sync`` as a whole process (``--repeat`` times each, the median; its peak RSS);
* search: queries chosen by document frequency from the index's own vocabulary (rare, middling
  and stop words, alone and in pairs: ``index_steps.choose_queries``), each once to warm up,
  then ``--rounds`` timed rounds with the hits built as the CLI prints them; p50 / p95 per kind
  and over all queries; and ``xcsh-store search WORD`` of a middling word as a whole process;
* ``ls``: ``list_sessions()`` of every session (library) and ``xcsh-store ls -n 20`` as a whole
  process (``--repeat`` times; median and peak RSS).

Growth is each figure at the largest size over the same figure at the smallest (the bytes grow
10x from 1 GB to 10 GB). Targets (issue 40): no-change sync < 1 s, search p95 < 50 ms, peak
RSS flat (the same at every size). Writes ``SCALE.md``, ``scale.png`` and ``scale.json`` into
``--out`` (default ``benchmarks/``; ``--quick`` writes into the work folder instead). The
machine's load average at the start and the end is in the header: on a shared 2-core machine
wall times move with it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import parse_size
from benchmarks.harness import (
    format_bytes,
    format_seconds,
    measure_command,
    percentile,
    print_table,
)
from benchmarks.index_common import WORK_DIR
from benchmarks.index_steps import run_step
from benchmarks.scale_tree import data_folder, home_sessions, scale_homes

ROOT = str(Path(__file__).resolve().parents[1])
HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = "1GB,3GB,10GB"
QUICK_SIZES = "20MB,60MB"
KINDS = ("rare", "middling", "stop")
NO_CHANGE_TARGET = 1.0
SEARCH_P95_TARGET = 0.050
_PAGE = os.sysconf("SC_PAGE_SIZE")


# ------------------------------------------------------------------------------------------------
# Memory of a process tree


def _descendants(pid: int) -> list[int]:
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    children = [int(child) for child in handle.read().split()]
            except OSError:
                continue
            found += children
            queue += children
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class TreeRss:
    """The largest sum of the RSS of this process's descendants, sampled every ``interval``
    seconds while the ``with`` block runs (pages shared between them counted in each)."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peak = 0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            pids = _descendants(os.getpid())
            total = sum(_rss(pid) for pid in pids)
            if total > self.peak:
                self.peak, self.peak_processes = total, len(pids)

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------------------------------------
# One size


def environment_for(home: Path, work: Path) -> dict[str, str]:
    """The variables every step of one size runs with: the home's Claude Code folder and no
    other agent's (index_common already points the rest into the work folder)."""
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(work / "config"),
        "XDG_DATA_HOME": str(work / "data"),
        "XDG_CACHE_HOME": str(work / "cache"),
    }


def cli(agent_dir: str, *arguments: str) -> list[str]:
    return [sys.executable, "-m", "xcsh_store", "--agent-dir", agent_dir, *arguments]


def whole_process(argv: list[str], repeat: int, work: Path) -> dict[str, Any]:
    """A CLI command run ``repeat`` times as a whole process: median wall, its peak RSS."""
    environment = dict(os.environ, PYTHONPATH=ROOT)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    run = measure_command(argv, repeat=repeat, cwd=work, env=environment)
    return {
        "median": statistics.median(run.seconds),
        "seconds": run.seconds,
        "peak_rss": run.peak_rss,
    }


@dataclass
class Place:
    """One size's home, work folder, agent dir and index."""

    size: str
    home: Path
    work: Path

    @property
    def agent_dir(self) -> str:
        return str(self.work / "agent")

    @property
    def db_path(self) -> str:
        return str(self.work / "agent" / "index.db")

    def enter(self) -> None:
        """Point the variables of every step (children inherit them) at this size's home."""
        os.environ.update(environment_for(self.home, self.work))

    def run(self, name: str, **arguments: Any) -> dict[str, Any]:
        self.enter()
        return run_step(ROOT, name, agent_dir=self.agent_dir, db_path=self.db_path, **arguments)

    def cli(self, *arguments: str) -> list[str]:
        self.enter()
        return cli(self.agent_dir, *arguments)


def build(place: Place, reuse: dict[str, Any] | None) -> dict[str, Any]:
    """The first sync of one size into an empty index, and index.db's size; with ``reuse``
    (the figures of an earlier run whose index is still there) neither is measured again."""
    sessions = home_sessions(place.home)
    total = sum(count for _path, count in sessions)
    if reuse is not None and os.path.exists(place.db_path):
        return {key: reuse[key] for key in ("size", "sessions", "bytes", "load_before", "sync",
                                            "index")}  # fmt: skip
    shutil.rmtree(place.work, ignore_errors=True)
    (Path(place.agent_dir) / "sessions").mkdir(parents=True)
    figures: dict[str, Any] = {
        "size": place.size, "sessions": len(sessions), "bytes": total,
        "load_before": os.getloadavg()[0],
    }  # fmt: skip
    print(f"[{time.strftime('%H:%M:%S')}] {place.size}: {len(sessions):,} sessions,"
          f" {total / 1e9:.2f} GB, first sync", file=sys.stderr, flush=True)  # fmt: skip
    with TreeRss() as tree:
        sync = place.run("full_sync")
    sync["mb_s"] = total / 1e6 / sync["seconds"]
    sync["peak_rss_sum"] = tree.peak
    sync["peak_rss_processes"] = tree.peak_processes
    if sync["files_seen"] < len(sessions):
        raise RuntimeError(f"the sync saw {sync['files_seen']} files of {len(sessions)}")
    figures["sync"] = sync
    figures["index"] = run_step(ROOT, "index_size", db_path=place.db_path)
    print(f"[{time.strftime('%H:%M:%S')}] {place.size}: synced in {sync['seconds']:.1f} s",
          file=sys.stderr, flush=True)  # fmt: skip
    return figures


def steady(places: list[Place], points: list[dict[str, Any]], options: Any) -> None:
    """The steps on an unchanged tree, the sizes taking turns (A B C, C B A, ...) so that a
    machine that slows down for a while slows every size alike; into ``points``."""
    print(f"[{time.strftime('%H:%M:%S')}] no-change syncs, ls, searches in turns",
          file=sys.stderr, flush=True)  # fmt: skip
    times: dict[str, dict[str, list[float]]] = {place.size: {} for place in places}
    rss: dict[str, dict[str, int]] = {place.size: {} for place in places}
    words = {}
    for place, point in zip(places, points, strict=True):
        place.enter()
        queries = run_step(ROOT, "choose_queries", db_path=place.db_path)
        point["entries"] = queries.pop("entries", point.get("entries"))
        for key in ("xcsh_store", "peak_rss", "peak_rss_child"):
            queries.pop(key, None)
        point["queries"] = queries
        words[place.size] = queries["middling"][0]
    for number in range(options.repeat):
        for place in places if number % 2 == 0 else places[::-1]:
            mine, peaks = times[place.size], rss[place.size]
            run = place.run("nochange_sync")
            mine.setdefault("nochange", []).append(run["seconds"])
            peaks["nochange"] = max(peaks.get("nochange", 0), run["peak_rss"])
            for label, argv in (
                ("nochange_cli", place.cli("sync")),
                ("ls_cli", place.cli("ls", "-n", "20")),
                ("search_cli", place.cli("search", words[place.size])),
            ):
                measured = whole_process(argv, 1, place.work)
                mine.setdefault(label, []).append(measured["median"])
                peaks[label] = max(peaks.get(label, 0), measured["peak_rss"])
    for place, point in zip(places, points, strict=True):
        for label, values in times[place.size].items():
            point[label] = {"median": statistics.median(values), "seconds": values,
                            "peak_rss": rss[place.size][label]}  # fmt: skip
        point["search_cli"]["word"] = words[place.size]
    for number in range(2):
        for place, point in (
            zip(places, points, strict=True)
            if number == 0
            else zip(places[::-1], points[::-1], strict=True)
        ):
            searched = place.run("search", queries=point["queries"], rounds=options.rounds)
            point.setdefault("search_runs", []).append(searched)
    for place, point in zip(places, points, strict=True):
        every: list[float] = []
        search: dict[str, Any] = {}
        runs = point.pop("search_runs")
        for kind in point["queries"]:
            kind_times = [value for run in runs for value in run[kind]["seconds"]]
            every += kind_times
            search[kind] = {
                "p50": percentile(kind_times, 50), "p95": percentile(kind_times, 95),
                "max": max(kind_times), "queries": len(point["queries"][kind]),
                "hits": runs[-1][kind]["hits"],
            }  # fmt: skip
        search["all"] = {"p50": percentile(every, 50), "p95": percentile(every, 95),
                         "max": max(every), "queries": len(every)}  # fmt: skip
        search["peak_rss"] = max(run["peak_rss"] for run in runs)
        search["queries_used"] = point.pop("queries")
        point["search"] = search
        point["list"] = place.run("list_sessions")
        point["load_after"] = os.getloadavg()[0]


# ------------------------------------------------------------------------------------------------
# Tables and plot


def _mb(count: float) -> str:
    return f"{count / 1e6:,.0f} MB"


def _ms(seconds: float) -> str:
    return format_seconds(seconds)


def _mark(ok: bool) -> str:
    return "✔" if ok else "✘"


def _figure(point: dict[str, Any], path: str) -> float:
    """A figure of a point by its dotted path: ``sync.seconds``, ``search.all.p95``."""
    value: Any = point
    for key in path.split("."):
        value = value[key]
    return float(value)


def _count(value: float) -> str:
    return f"{value:,.0f}"


# (label, dotted path in a point, cell format, target: (limit, its text) or a text)
ROWS: list[tuple[str, str, Any, tuple[float, str] | str]] = [
    ("sessions", "sessions", _count, "–"),
    ("entries", "entries", _count, "–"),
    ("first sync, wall", "sync.seconds", _ms, "–"),
    ("first sync, MB/s", "sync.mb_s", lambda value: f"{value:.1f}", "–"),
    ("first sync, peak RSS of the writer (main)", "sync.peak_rss", _mb, "flat"),
    ("first sync, peak RSS of the largest worker", "sync.peak_rss_child", _mb, "flat"),
    ("first sync, peak RSS of all its processes (sum)", "sync.peak_rss_sum", _mb, "flat"),
    ("index.db", "index.bytes", _mb, "–"),
    ("no-change sync, open + sync (library)", "nochange.median", _ms,
     (NO_CHANGE_TARGET, "< 1 s")),
    ("no-change `xcsh-store sync`, whole process", "nochange_cli.median", _ms,
     (NO_CHANGE_TARGET, "< 1 s")),
    ("no-change `xcsh-store sync`, peak RSS", "nochange_cli.peak_rss", _mb, "flat"),
    *((f"search {kind}, p50 / p95", f"search.{kind}.p95", _ms, (SEARCH_P95_TARGET, "p95 < 50 ms"))
      for kind in KINDS),
    ("search, every query: p95", "search.all.p95", _ms, (SEARCH_P95_TARGET, "< 50 ms")),
    ("search, the slowest query", "search.all.max", _ms, "–"),
    ("search process, peak RSS", "search.peak_rss", _mb, "flat"),
    ("`xcsh-store search WORD` (middling), whole process", "search_cli.median", _ms, "–"),
    ("list_sessions() of every session (library)", "list.median", _ms, "–"),
    ("`xcsh-store ls -n 20`, whole process", "ls_cli.median", _ms, "–"),
    ("`xcsh-store ls -n 20`, peak RSS", "ls_cli.peak_rss", _mb, "flat"),
]  # fmt: skip


def rows_of(points: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One column per size and one for the growth from the smallest to the largest (of the
    p95 where a cell gives p50 / p95)."""
    first, last = format_bytes(points[0]["bytes"]), format_bytes(points[-1]["bytes"])
    headers = ["figure", *(format_bytes(point["bytes"]) for point in points)]
    headers += [f"{last} / {first}", "target"]
    rows = []
    for label, path, show, target in ROWS:
        values = [_figure(point, path) for point in points]
        cells = [show(value) for value in values]
        if path.startswith("search.") and path.endswith(".p95"):
            p50 = path[: -len("p95")] + "p50"
            cells = [
                f"{_ms(_figure(point, p50))} / {cell}"
                for point, cell in zip(points, cells, strict=True)
            ]
        growth = f"{values[-1] / values[0]:.2f}×" if values[0] else "–"
        if isinstance(target, tuple):
            limit, text = target
            target = f"{text} {_mark(all(value < limit for value in values))}"
        rows.append([label, *cells, growth, target])
    ratios = [point["index"]["bytes"] / point["bytes"] for point in points]
    rows.insert(8, ["index.db / session bytes", *(f"{ratio:.2f}×" for ratio in ratios),
                    f"{ratios[-1] / ratios[0]:.2f}×", "≤ 0.40×"])  # fmt: skip
    return headers, rows


def plot(points: list[dict[str, Any]], path: Path) -> None:
    """Four panels over the session bytes (log-log): first sync time, peak RSS, the no-change
    sync and ``ls``, search latency; dotted lines for linear growth and the targets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    gigabytes = [point["bytes"] / 1e9 for point in points]
    figure, ((build, memory), (steady, search)) = plt.subplots(2, 2, figsize=(14, 10))

    seconds = [point["sync"]["seconds"] for point in points]
    build.plot(gigabytes, seconds, "o-", label="first sync")
    build.plot(gigabytes, [g * seconds[0] / gigabytes[0] for g in gigabytes], "k:",
               label="linear in the bytes (from the smallest)")  # fmt: skip
    build.set(ylabel="seconds", title="First sync (wall)")

    for label, get in (
        ("first sync: all processes (sum)", lambda p: p["sync"]["peak_rss_sum"]),
        ("first sync: writer (main)", lambda p: p["sync"]["peak_rss"]),
        ("first sync: largest worker", lambda p: p["sync"]["peak_rss_child"]),
        ("no-change sync (CLI)", lambda p: p["nochange_cli"]["peak_rss"]),
        ("search process", lambda p: p["search"]["peak_rss"]),
        ("ls -n 20 (CLI)", lambda p: p["ls_cli"]["peak_rss"]),
    ):
        # No worker at a small size: no point (a log axis has no 0).
        megabytes = [get(point) / 1e6 or float("nan") for point in points]
        memory.plot(gigabytes, megabytes, "o-", label=label)
    memory.set(ylabel="MB", title="Peak RSS (flat is the target)")
    memory.set_ylim(top=max(point["sync"]["peak_rss_sum"] for point in points) / 1e6 * 1.6)

    for label, get in (
        ("no-change `sync`, whole process", lambda p: p["nochange_cli"]["median"]),
        ("no-change sync, open + sync", lambda p: p["nochange"]["median"]),
        ("`ls -n 20`, whole process", lambda p: p["ls_cli"]["median"]),
        ("list_sessions(), every session", lambda p: p["list"]["median"]),
    ):
        steady.plot(gigabytes, [get(point) * 1e3 for point in points], "o-", label=label)
    steady.axhline(NO_CHANGE_TARGET * 1e3, color="r", linestyle="--",
                   label="no-change target (1 s)")  # fmt: skip
    steady.set(ylabel="ms", title="No-change sync and ls")

    for kind in (*KINDS, "all"):
        for stat, style in (("p95", "o-"), ("p50", "x:")):
            if kind == "all" and stat == "p50":
                continue
            search.plot(gigabytes, [point["search"][kind][stat] * 1e3 for point in points],
                        style, label=f"{kind} {stat}")  # fmt: skip
    search.axhline(SEARCH_P95_TARGET * 1e3, color="r", linestyle="--", label="p95 target (50 ms)")
    search.set(ylabel="ms", title="Search (library, hits built)")

    labels = [format_bytes(point["bytes"]) for point in points]
    plain = matplotlib.ticker.FuncFormatter(lambda value, _position: f"{value:g}")
    for axes in (build, memory, steady, search):
        axes.set(xscale="log", yscale="log", xlabel="Claude Code session bytes")
        axes.set_xticks(gigabytes, labels)
        axes.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        axes.yaxis.set_major_formatter(plain)
        low, high = axes.get_ylim()
        if high / low < 30:  # labels between the decades only where they fit
            axes.yaxis.set_minor_formatter(plain)
            axes.tick_params(axis="y", which="minor", labelsize=7)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_outputs(saved: dict[str, Any], out: Path) -> list[Path]:
    points = saved["points"]
    headers, rows = rows_of(points)
    table = print_table(rows, headers, title=f"Scale point: {saved['ended']}")
    queries = points[-1]["search"]["queries_used"]
    text = "\n\n".join([
        "# The scale point (issue 40, item 6)",
        f"{saved['ended']} Homes: benchmarks/scale_tree.py. Raw figures: `scale.json`"
        " (`--replot` redraws from it).",
        "![scale](scale.png)",
        table,
        "Queries of the largest size (chosen from its index by document frequency): "
        + "; ".join(f"{kind}: {', '.join(queries[kind][:6])}, …" for kind in queries),
    ])  # fmt: skip
    (out / "SCALE.md").write_text(text + "\n")
    plot(points, out / "scale.png")
    return [out / "SCALE.md", out / "scale.png"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--data", type=Path, default=None, help="where the homes are cached")
    parser.add_argument("--work", type=Path, default=None,
                        help="where the indexes go (default <data>/scale-work)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3, help="no-change syncs, CLI steps")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the queries")
    parser.add_argument("--jobs", type=int, default=2, help="processes writing the homes")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the indexes")
    parser.add_argument(
        "--reuse", action="store_true",
        help="indexes kept by an earlier --keep run: its first syncs (from --out's scale.json)"
        " are not measured again, the other steps are",
    )  # fmt: skip
    parser.add_argument("--quick", action="store_true", help=f"--sizes {QUICK_SIZES}, once")
    parser.add_argument(
        "--replot", type=Path, default=None,
        help="no measuring: the table and plot again from a scale.json",
    )  # fmt: skip
    options = parser.parse_args()
    if options.replot:
        saved = json.loads(options.replot.read_text())
        out = options.out or options.replot.parent
        print("wrote", ", ".join(map(str, write_outputs(saved, out))))
        return
    if options.quick:
        options.sizes, options.repeat, options.rounds = QUICK_SIZES, 1, 1
        options.data = options.data or WORK_DIR / "scale-data"
    data = data_folder(options.data)
    options.work = options.work or data / "scale-work"
    out = options.out or (WORK_DIR / "scale" if options.quick else HERE)
    out.mkdir(parents=True, exist_ok=True)
    sizes = sorted((size.strip() for size in options.sizes.split(",") if size.strip()),
                   key=parse_size)  # fmt: skip
    load_start = os.getloadavg()
    homes = scale_homes(sizes, data, options.jobs)
    command = " ".join(["python -m benchmarks.bench_scale", *sys.argv[1:]])
    earlier: dict[str, Any] = {}
    if options.reuse:
        saved_before = json.loads((out / "scale.json").read_text())
        earlier = {point["size"]: point for point in saved_before["points"]}
    places = [Place(size, homes[size], options.work / size.lower()) for size in sizes]
    points = [build(place, earlier.get(place.size)) for place in places]
    steady(places, points, options)
    commit = subprocess.run(
        ["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()
    ended = (
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `{command}` on"
        f" {os.cpu_count()} CPUs, Python {platform.python_version()}, code {commit or '?'},"
        f" load average {load_start[0]:.1f} at the start and {os.getloadavg()[0]:.1f} at the end."
    )
    if options.reuse:
        ended += f" First syncs and index sizes from the earlier run: {saved_before['ended']}"
    saved = {"command": command, "ended": ended, "points": points}
    (out / "scale.json").write_text(json.dumps(saved, indent=1) + "\n")
    if not options.keep:
        for place in places:
            shutil.rmtree(place.work, ignore_errors=True)
    written = write_outputs(saved, out)
    print("wrote", ", ".join(map(str, [*written, out / "scale.json"])))


if __name__ == "__main__":
    main()
