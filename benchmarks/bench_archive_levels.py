"""What the archive's compression could be (issue 34, "archive size ≤ 0.25×"), side by side in one
run on the same files: Zstandard levels, long-distance matching, piece sizes, and a dictionary
trained per agent, on the real JSONL fixtures (tests/fixtures, every agent) and on the generated
corpus (benchmarks/corpus.py), with the entropy of the generator's prose as the floor no coder
goes under:

    python -m benchmarks.bench_archive_levels [--corpus-size 100MB] [--files 60]

Each figure is compressed bytes / source bytes of the same sample of files (a random sample of
``--files`` files, the same for every row), and the compression speed in MB/s of one core.
What the archive does today (frames.LEVEL, capture.PIECE_BYTES) is the row marked "archive".
The dictionary rows train on one half of the sample and compress the other half (a dictionary
trained on the files it compresses would flatter it).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpus import WORDS_FILE, cached_corpus, generate_agent_dir, parse_size
from xcsh_store.index.archive.capture import PIECE_BYTES
from xcsh_store.index.archive.frames import LEVEL

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
DICTIONARY_BYTES = 112_640  # zstd's default dictionary size (110 KB)


def _sample(folder: Path, count: int) -> list[bytes]:
    files = sorted(path for path in folder.rglob("*.jsonl") if path.is_file())
    random.Random(0).shuffle(files)
    return [path.read_bytes() for path in files[:count]]


def _ratio(
    datas: list[bytes], make: Callable[[], zstandard.ZstdCompressor], piece: int | None = None
) -> tuple[float, float]:
    """(compressed / source bytes, MB/s): each file whole, or in pieces of ``piece`` bytes, each
    its own frame (as the archive writes them)."""
    total = sum(len(data) for data in datas)
    out = 0
    started = time.perf_counter()
    for data in datas:
        compressor = make()
        step = piece or max(len(data), 1)
        out += sum(
            len(compressor.compress(data[at : at + step])) for at in range(0, len(data), step)
        )
    seconds = time.perf_counter() - started
    return out / total, total / seconds / 1e6


def _rows(datas: list[bytes]) -> list[tuple[str, float, float]]:
    rows = []
    rows.append(
        (f"archive: level {LEVEL}, pieces of {PIECE_BYTES >> 20} MB",
         *_ratio(datas, lambda: zstandard.ZstdCompressor(level=LEVEL), PIECE_BYTES))
    )  # fmt: skip
    for level in (1, 3, 6, 9, 12, 19):
        rows.append(
            (f"level {level}, whole files",
             *_ratio(datas, lambda level=level: zstandard.ZstdCompressor(level=level)))
        )  # fmt: skip
    for level in (3, 9):
        params = zstandard.ZstdCompressionParameters.from_level(
            level, enable_ldm=True, window_log=27
        )
        rows.append(
            (f"level {level} + long-distance matching (128 MB window), whole files",
             *_ratio(datas, lambda params=params: zstandard.ZstdCompressor(
                 compression_params=params)))
        )  # fmt: skip
    rows.append(
        ("level 3, pieces of 64 KB",
         *_ratio(datas, lambda: zstandard.ZstdCompressor(level=3), 64 << 10))
    )  # fmt: skip
    train, test = datas[: len(datas) // 2], datas[len(datas) // 2 :]
    samples = [data[at : at + 4096] for data in train for at in range(0, len(data), 4096)]
    dictionary = zstandard.train_dictionary(DICTIONARY_BYTES, samples[:20_000])
    for piece, label in ((64 << 10, "pieces of 64 KB"), (None, "whole files")):
        plain, _speed = _ratio(test, lambda: zstandard.ZstdCompressor(level=3), piece)
        trained, speed = _ratio(
            test, lambda: zstandard.ZstdCompressor(level=3, dict_data=dictionary), piece
        )
        rows.append((f"level 3, {label}, held-out half: without a dictionary", plain, 0.0))
        rows.append((f"level 3, {label}, held-out half: a 110 KB trained dictionary", trained,
                     speed))  # fmt: skip
    return rows


def prose_entropy() -> tuple[float, float]:
    """(bits per word, source bytes per compressed byte at that entropy): the generator draws
    prose words independently from a Zipf-Mandelbrot law (s = 1, q = 2.7) over words.txt, so no
    coder keeps its prose in fewer bits than this entropy, whatever it knows."""
    words = WORDS_FILE.read_text(encoding="utf-8").split()
    weights = [1 / (rank + 2.7) for rank in range(len(words))]
    total = sum(weights)
    shares = [weight / total for weight in weights]
    bits = -sum(share * math.log2(share) for share in shares)
    chars = sum(share * (len(word.encode()) + 1) for share, word in zip(shares, words, strict=True))
    return bits, bits / chars / 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-size", default="100MB")
    parser.add_argument("--files", type=int, default=60)
    arguments = parser.parse_args()
    size = parse_size(arguments.corpus_size)
    sessions = max(20, int(size // 500_000))
    manifest = cached_corpus(
        f"agent-{arguments.corpus_size.lower()}-{sessions}", generate_agent_dir,
        total_bytes=size, sessions=sessions,
    )  # fmt: skip
    samples = {
        "real fixtures (every agent's JSONL)": _sample(FIXTURES, arguments.files),
        f"generated corpus ({arguments.corpus_size})": _sample(
            Path(manifest.agent_dir) / "sessions", arguments.files
        ),
    }
    for name, datas in samples.items():
        print(f"\n{name}: {len(datas)} files, {sum(map(len, datas)) / 1e6:.1f} MB")
        print("| compression | archive / source | MB/s |\n|---|---:|---:|")
        for label, ratio, speed in _rows(datas):
            print(
                f"| {label} | {ratio:.3f} | {speed:.0f} |"
                if speed
                else f"| {label} | {ratio:.3f} | – |"
            )
    bits, floor = prose_entropy()
    print(f"\ngenerated prose: {bits:.2f} bits per word drawn, at best {floor:.3f} of its bytes")


if __name__ == "__main__":
    main()
