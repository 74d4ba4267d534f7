"""The cost curve: what the index costs to build and keep, and what it answers, as sessions grow.

    python benchmarks/bench_cost_curve.py [--sizes 100MB,1GB,3GB] [--sessions-per-gb 2000]
        [--workers 1,2] [--repeat 5] [--out benchmarks] [--quick]
    python benchmarks/bench_cost_curve.py --replot benchmarks/cost_curve.json
    python benchmarks/bench_cost_curve.py --first-usage-only --sizes 100MB,1GB

For each size, a cached agent corpus (benchmarks/corpus.py, sessions scaled with the size:
200 / 2,000 / 6,000) and, each step in a fresh process (benchmarks/index_steps.py): full sync
from an empty index (MB/s, peak RSS), index.db size (and per table, from dbstat), a no-change
sync, a one-append sync (one realistic 1.8 KB entry appended to the largest session, then open
and sync), list_sessions, search p50/p95 of rare, middling and stop-word queries (chosen from
the index's vocabulary by document frequency) and the context of the deepest leaf. Writes
``COST_CURVE.md`` (the tables), ``cost_curve.png`` (the plot) and ``cost_curve.json`` (the raw
figures, from which ``--replot`` draws both again without measuring) into ``--out``; ``--quick``
runs tiny sizes and writes them to the work folder instead, so a smoke run never replaces
real figures. ``--workers 1,2`` adds full syncs with that many workers where
``SessionIndex.sync`` takes the option ("n/a" where it does not).

The first run beside ccusage (issue 28, item 7): for each size, a Claude Code home of that many
bytes made of the real fixture files (benchmarks/claude_tree.py) and, in turns, ccusage 20.0.24
``claude daily --offline`` and xcsh-store's first ``usage`` on a fresh index (usage first), the
text pass that completes it and ``usage`` after one appended entry (bench_first_usage.measure);
with the cost per GB of each operation. ``--first-usage-only`` measures just that and adds it
to the points of the ``cost_curve.json`` in ``--out`` (the other figures kept as they are).

Targets (issue 16): sync grows linearly with the bytes, queries stay flat; on 1 GB index.db at
most 0.40x the session bytes, full sync at least 50 MB/s, search middling p95 at most 10 ms
and stop words at most 20 ms. Figures from a busy 2-core machine are indicative only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_first_usage import measure as first_usage
from benchmarks.corpus import parse_size
from benchmarks.harness import format_bytes, format_seconds, print_table
from benchmarks.index_common import WORK_DIR, agent_corpus
from benchmarks.index_compare import ROOT, measure, remove_subject_files, subject

HERE = Path(__file__).resolve().parent
QUICK_SIZES = "10MB,30MB"
KINDS = ("rare", "middling", "stop")


def sessions_for(size: str, per_gb: int) -> int:
    return max(10, round(parse_size(size) / 1e9 * per_gb))


@dataclass
class Corpus:
    """What the tables say of a corpus."""

    sessions: int
    total_bytes: int
    entries: int


Result = tuple[Corpus, dict[str, Any]]


def run_size(size: str, options: argparse.Namespace) -> Result:
    """Every step on the corpus of one size: the corpus and the figures."""
    manifest = agent_corpus(size, sessions_for(size, options.sessions_per_gb))
    item = subject("current tree", ROOT, manifest, WORK_DIR / "cost-curve" / size.lower())
    try:
        extra = measure(
            [item], manifest, repeat=options.repeat, rounds=options.rounds,
            workers=options.workers,
        )  # fmt: skip
    finally:
        remove_subject_files(item)
    corpus = Corpus(manifest.sessions, manifest.total_bytes, manifest.entries)
    figures = item.figures | extra
    if options.first_usage:
        figures["first_usage"] = first_usage(size, options.first_usage_rounds, options.cache)
    return corpus, figures


def first_usage_table(results: list[Result]) -> str | None:
    """The first run beside ccusage, and each operation's cost per GB."""
    measured = [
        (figures["first_usage"], figures, corpus.total_bytes / 1e9)
        for corpus, figures in results
        if "first_usage" in figures
    ]
    if not measured:
        return None
    headers = [
        "Claude Code bytes", "ccusage claude daily", "first usage (usage first)", "× ccusage",
        "text pass after it", "usage after an append", "× ccusage",
    ]  # fmt: skip
    rows = []
    per_gb = []
    for first, figures, sync_gigabytes in measured:
        median = first["median"]
        gigabytes = first["bytes"] / 1e9
        rows.append([
            format_bytes(first["bytes"]), format_seconds(median["ccusage"]),
            format_seconds(median["usage"]), f"{median['usage'] / median['ccusage']:.2f}×",
            format_seconds(median["text"]), format_seconds(median["append"]),
            f"{median['append'] / median['ccusage']:.2f}×",
        ])  # fmt: skip
        per_gb.append([
            format_bytes(first["bytes"]),
            f"{median['ccusage'] / gigabytes:.2f} s", f"{median['usage'] / gigabytes:.2f} s",
            f"{median['text'] / gigabytes:.2f} s", f"{median['full'] / gigabytes:.2f} s",
            f"{figures['sync']['seconds'] / sync_gigabytes:.2f} s",
            f"{figures['size']['bytes'] / sync_gigabytes / 1e6:.0f} MB",
        ])  # fmt: skip
    per_gb_headers = [
        "Claude Code bytes", "ccusage daily / GB", "first usage / GB", "text pass / GB",
        "first usage with text / GB", "full sync / GB, xcsh corpus", "index.db / GB, xcsh corpus",
    ]  # fmt: skip
    return "\n\n".join([
        _titled(rows, headers, "The first run beside ccusage (same Claude Code tree, in turns)"),
        _titled(per_gb, per_gb_headers, "Cost per GB of sessions"),
    ])  # fmt: skip


def search_cell(search: dict[str, Any], kind: str) -> str:
    figures = search[kind]
    return f"{format_seconds(figures['p50'])} / {format_seconds(figures['p95'])}"


def workers_cells(figures: dict[str, Any], workers: tuple[int, ...]) -> list[str]:
    cells = []
    for count in workers:
        run = figures["sync_workers"][str(count)]
        cells.append(
            "n/a"
            if "seconds" not in run
            else f"{format_seconds(run['seconds'])} ({run['mb_s']:.1f} MB/s)"
        )
    return cells


def tables(results: list[Result], workers: tuple[int, ...]) -> list[str]:
    """The three Markdown tables: building and keeping, answering, and size per table."""
    build_headers = [
        "sessions", "session bytes", "entries", "full sync", "MB/s",
        *(f"full sync, {count} worker{'s' * (count > 1)}" for count in workers),
        "peak RSS (main / largest child)", "index.db", "× session bytes",
        "no-change sync", "one-append sync (bytes read)",
    ]  # fmt: skip
    build_rows = []
    query_rows = []
    for manifest, figures in results:
        sync, append = figures["sync"], figures["append"]
        build_rows.append([
            f"{manifest.sessions:,}", format_bytes(manifest.total_bytes),
            f"{manifest.entries:,}", format_seconds(sync["seconds"]), f"{sync['mb_s']:.1f}",
            *workers_cells(figures, workers),
            f"{format_bytes(sync['peak_rss'])} / "
            + (format_bytes(sync["peak_rss_child"]) if sync["peak_rss_child"] else "–"),
            format_bytes(figures["size"]["bytes"]), f"{figures['size']['ratio']:.2f}×",
            format_seconds(figures["nochange"]),
            f"{format_seconds(append['median'])} ({append['bytes_read']:,} B)",
        ])  # fmt: skip
        context = figures["context"]
        query_rows.append([
            format_bytes(manifest.total_bytes),
            f"{format_seconds(figures['list']['median'])} ({figures['list']['sessions']:,})",
            *(search_cell(figures["search"], kind) for kind in KINDS),
            f"{format_seconds(context['median'])} (first {format_seconds(context['first'])},"
            f" depth {context['depth']:,})",
        ])  # fmt: skip
    query_headers = [
        "session bytes", "list_sessions (sessions)",
        *(f"search {kind} p50 / p95" for kind in KINDS), "context of the deepest leaf",
    ]  # fmt: skip
    markdown = [
        _titled(build_rows, build_headers, "Building and keeping the index"),
        _titled(query_rows, query_headers, "Answering (each step in a fresh process)"),
    ]
    first = first_usage_table(results)
    if first is not None:
        markdown.append(first)
    names = _largest_tables(results)
    if names:
        size_rows = []
        for name in names:
            cells = [name]
            for _manifest, figures in results:
                table_bytes = (figures["size"]["tables"] or {}).get(name, 0)
                cells.append(
                    f"{format_bytes(table_bytes)} ({table_bytes / figures['size']['bytes']:.0%})"
                )
            size_rows.append(cells)
        headers = ["table (with its indexes)"]
        headers += [format_bytes(manifest.total_bytes) for manifest, _ in results]
        markdown.append(_titled(size_rows, headers, "index.db by table (dbstat)"))
    return markdown


def _titled(rows: list[list[str]], headers: list[str], title: str) -> str:
    return f"## {title}\n\n" + print_table(rows, headers, title=title)


def _largest_tables(results: list[Result]) -> list[str]:
    """The tables that hold 99 % of the largest index, biggest first."""
    tables_of_largest = results[-1][1]["size"]["tables"]
    if not tables_of_largest:
        return []
    total = sum(tables_of_largest.values())
    names, running = [], 0
    for name, size in sorted(tables_of_largest.items(), key=lambda item: -item[1]):
        names.append(name)
        running += size
        if running >= 0.99 * total:
            break
    return names


def plot(results: list[Result], path: Path) -> None:
    """Three panels over the session bytes (log x): sync time, index size, query times."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    gigabytes = [manifest.total_bytes / 1e9 for manifest, _ in results]
    first_runs = [figures["first_usage"] for _, figures in results if "first_usage" in figures]
    panels = 4 if first_runs else 3
    figure, axes_row = plt.subplots(1, panels, figsize=(6 * panels, 5))
    build, size, queries = axes_row[:3]

    seconds = [figures["sync"]["seconds"] for _, figures in results]
    build.plot(gigabytes, seconds, "o-", label="full sync")
    # Linear growth through the largest point: what "sync grows with the bytes" looks like.
    build.plot(gigabytes, [g * seconds[-1] / gigabytes[-1] for g in gigabytes], "k:",
               label="linear in the bytes")  # fmt: skip
    build.set(xscale="log", yscale="log", xlabel="session bytes", ylabel="seconds",
              title="Full sync")  # fmt: skip

    size.plot(gigabytes, [figures["size"]["bytes"] / 1e6 for _, figures in results], "o-",
              label="index.db")  # fmt: skip
    size.plot(gigabytes, [g * 1e3 for g in gigabytes], "k:", label="1× the session bytes")
    size.plot(gigabytes, [g * 400 for g in gigabytes], "g--", label="0.40× (target)")
    size.set(xscale="log", yscale="log", xlabel="session bytes", ylabel="MB",
             title="Index size")  # fmt: skip

    lines = {
        "list_sessions": [figures["list"]["median"] for _, figures in results],
        **{
            f"search {kind} p95": [figures["search"][kind]["p95"] for _, figures in results]
            for kind in KINDS
        },
        "context, deepest leaf": [figures["context"]["median"] for _, figures in results],
        "no-change sync": [figures["nochange"] for _, figures in results],
        "one-append sync": [figures["append"]["median"] for _, figures in results],
    }
    for label, values in lines.items():
        queries.plot(gigabytes, [value * 1e3 for value in values], "o-", label=label)
    queries.set(xscale="log", yscale="log", xlabel="session bytes", ylabel="ms",
                title="Queries and incremental syncs (should stay flat)")  # fmt: skip
    labels = [format_bytes(manifest.total_bytes) for manifest, _ in results]
    plain = matplotlib.ticker.FuncFormatter(lambda value, _position: f"{value:g}")
    if first_runs:
        first = axes_row[3]
        claude_gigabytes = [run["bytes"] / 1e9 for run in first_runs]
        for step, label in (
            ("ccusage", "ccusage claude daily"), ("usage", "first usage (usage first)"),
            ("full", "first usage with search text"), ("text", "text pass after it"),
            ("append", "usage after an append"),
        ):  # fmt: skip
            first.plot(claude_gigabytes, [run["median"][step] for run in first_runs], "o-",
                       label=label)  # fmt: skip
        first.set(xscale="log", yscale="log", xlabel="Claude Code session bytes",
                  ylabel="seconds", title="First run beside ccusage")  # fmt: skip
        first.set_xticks(claude_gigabytes, [format_bytes(run["bytes"]) for run in first_runs])
        first.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        first.yaxis.set_major_formatter(plain)
        first.yaxis.set_minor_formatter(plain)
        first.grid(True, which="both", alpha=0.3)
        first.legend(fontsize=8)
    for axes in (build, size, queries):
        axes.set_xticks(gigabytes, labels)
        axes.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        axes.yaxis.set_major_formatter(plain)
        axes.yaxis.set_minor_formatter(plain)
        axes.tick_params(axis="y", which="minor", labelsize=7)
        axes.grid(True, which="both", alpha=0.3)
    build.legend(fontsize=8)
    size.legend(fontsize=8)
    # Seven lines: their legend goes beside the panel, where it hides none of them.
    queries.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _add_first_usage(saved_path: Path, options: argparse.Namespace) -> Path:
    """Measure the first run beside ccusage at each of ``--sizes`` into the saved point of
    that size (by its session bytes, the nearest); returns the file to draw from."""
    saved = json.loads(saved_path.read_text())
    for size in (size.strip() for size in options.sizes.split(",") if size.strip()):
        wanted = parse_size(size)
        point = min(saved["points"], key=lambda p: abs(p["corpus"]["total_bytes"] - wanted))
        point["figures"]["first_usage"] = first_usage(
            size, options.first_usage_rounds, options.cache
        )
    command = " ".join(["python benchmarks/bench_cost_curve.py", *sys.argv[1:]])
    saved["ended"] += (
        f" The first run beside ccusage: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f" with `{command}`, load average {os.getloadavg()[0]:.1f} at the end."
    )
    saved_path.write_text(json.dumps(saved, indent=1) + "\n")
    return saved_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100MB,1GB,3GB")
    parser.add_argument("--sessions-per-gb", type=int, default=2000)
    parser.add_argument("--workers", default="", help="extra full syncs, e.g. 1,2")
    parser.add_argument("--repeat", type=int, default=5, help="no-change and append syncs")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the queries")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help=f"--sizes {QUICK_SIZES}, once")
    parser.add_argument(
        "--no-first-usage", dest="first_usage", action="store_false",
        help="leave out the first run beside ccusage",
    )  # fmt: skip
    parser.add_argument(
        "--first-usage-only", action="store_true",
        help="measure only the first run beside ccusage, into the points of --out's json",
    )  # fmt: skip
    parser.add_argument("--first-usage-rounds", type=int, default=3)
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "xcsh-store-bench" / "ccusage",
        help="where ccusage is installed from npm",
    )  # fmt: skip
    parser.add_argument(
        "--replot", type=Path, default=None,
        help="no measuring: the tables and plot again from a cost_curve.json",
    )  # fmt: skip
    options = parser.parse_args()
    if options.quick:
        options.sizes, options.repeat, options.rounds = QUICK_SIZES, 1, 1
    out = options.out or (WORK_DIR / "cost-curve" if options.quick else HERE)
    out.mkdir(parents=True, exist_ok=True)
    if options.first_usage_only:
        options.replot = _add_first_usage(out / "cost_curve.json", options)
    if options.replot:
        saved = json.loads(options.replot.read_text())
        results = [(Corpus(**point["corpus"]), point["figures"]) for point in saved["points"]]
        command, ended = saved["command"], saved["ended"]
        workers = tuple(saved["workers"])
    else:
        workers = options.workers = tuple(int(n) for n in options.workers.split(",") if n)
        sizes = [size.strip() for size in options.sizes.split(",") if size.strip()]
        results = sorted(
            (run_size(size, options) for size in sizes), key=lambda result: result[0].total_bytes
        )
        command = " ".join(["python benchmarks/bench_cost_curve.py", *sys.argv[1:]])
        ended = (
            f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `{command}` on"
            f" {os.cpu_count()} CPUs, Python {platform.python_version()}, load average"
            f" {os.getloadavg()[0]:.1f} at the end."
        )
        points = [{"corpus": asdict(corpus), "figures": figures} for corpus, figures in results]
        saved = {"command": command, "ended": ended, "workers": workers, "points": points}
        (out / "cost_curve.json").write_text(json.dumps(saved, indent=1) + "\n")
    header = [
        "# The cost curve",
        "",
        f"{ended} Sync workers: the default"
        f"{'' if results[0][1]['workers_option'] else ' (this tree has no workers option)'}."
        " Raw figures: `cost_curve.json` (`--replot` redraws from it).",
        "",
        "![cost curve](cost_curve.png)",
    ]
    markdown = tables(results, workers)
    plot(results, out / "cost_curve.png")
    target = out / "COST_CURVE.md"
    target.write_text("\n\n".join(["\n".join(header), *markdown]) + "\n")
    written = [target, out / "cost_curve.png"]
    print(
        "wrote",
        ", ".join(map(str, written if options.replot else [*written, out / "cost_curve.json"])),
    )


if __name__ == "__main__":
    main()
