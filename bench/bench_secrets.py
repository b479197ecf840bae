"""Secret detection (`memctl.core.secrets`): recall and false positives on the labelled set
(tests/data/secrets_labelled.py), false positives on sample_memory/ and on a generated store
(bench/gen_corpus.py), and scan time for a 1 KB note, a 1 MB note and hostile inputs.

    .venv/bin/python bench/bench_secrets.py [--notes 2000] [--detect-secrets-python PY]

memctl's figures need nothing beyond memctl. With `--detect-secrets-python PY` (an interpreter
that has Yelp's detect-secrets, e.g. `python3 -m venv /tmp/ds && /tmp/ds/bin/pip install
detect-secrets`, then `--detect-secrets-python /tmp/ds/bin/python`), or when detect-secrets
is importable here, the same figures are added for it: all its default plugins and filters,
each text written to a `.md` file and read by `scan_file` (how it would scan a store), and,
for the labelled set, `scan_line` too (its ad-hoc mode, which searches eagerly). The
detect-secrets side runs in that interpreter, so memctl never depends on it.

A text counts as found when the scanner reports anything in it; "right kind" is memctl's own
stricter figure (exactly one finding, of the labelled kind).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LABELLED_PATH = REPO / "tests" / "data" / "secrets_labelled.py"
MB = 1_000_000


def load_labelled() -> ModuleType:
    spec = importlib.util.spec_from_file_location("secrets_labelled", LABELLED_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hostile_inputs() -> dict[str, str]:
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "+/"
    return {
        "80 KB of `pwd:`": "pwd:" * 20_000,
        "1 MB of `a`": "a" * MB,
        "`password=` x 20000 (180 KB)": "password=" * 20_000,
        "one 900 KB line of base64-ish": "".join(rng.choice(alphabet) for _ in range(900_000)),
        "`%3D` x 100000 (300 KB)": "%3D" * 100_000,
        "`密码：……` x 50000 (300 K chars)": "密码：……" * 50_000,
        "`curl -u ` x 50000 (400 KB)": "curl -u " * 50_000,
        "`mysql -p` x 50000 (400 KB)": "mysql -p" * 50_000,
        "`\"auths\" \"auth\": \"` x 30000 (420 KB)": '"auths" "auth": "' * 30_000,
        "`123456789:AA` x 50000 (600 KB)": "123456789:AA" * 50_000,
        "`the password is ` x 30000 (480 KB)": "the password is " * 30_000,
        "`密码是` x 100000 (300 K chars)": "密码是" * 100_000,
    }


def memory_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".toml", ""))


def notes_of_size(files: list[Path], size: int) -> str:
    """Real notes from the generated store, concatenated up to `size` characters."""
    parts: list[str] = []
    total = 0
    while total < size:
        for path in files:
            text = path.read_text(encoding="utf-8")
            parts.append(text)
            total += len(text) + 1
            if total >= size:
                break
    return "\n".join(parts)[:size]


def timed(function: Callable[[str], object], text: str, repeat: int) -> float:
    """Median seconds of `repeat` runs."""
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        function(text)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


# --- the detect-secrets side (runs in the interpreter that has it) ------------------------------


def detect_secrets_figures(job: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="ds-bench-") as folder:
        return _detect_secrets_figures(job, Path(folder))


def _detect_secrets_figures(job: dict, folder: Path) -> dict:
    from detect_secrets.core.scan import scan_file, scan_line
    from detect_secrets.settings import default_settings

    labelled = load_labelled()
    counter = [0]

    def by_file(text: str) -> int:
        counter[0] += 1
        path = folder / f"note-{counter[0]}.md"
        path.write_text(text, encoding="utf-8")
        return len(list(scan_file(str(path))))

    def by_line(text: str) -> int:
        return sum(len(list(scan_line(line))) for line in text.split("\n"))

    out: dict = {}
    with default_settings():
        for mode, scanner in (("file", by_file), ("line", by_line)):
            out[mode] = {
                "secrets": [bool(scanner(t)) for t, _k, _s in labelled.SECRETS],
                "non_secrets": [bool(scanner(t)) for t, _w in labelled.NON_SECRETS],
            }
        for name, root in job["stores"].items():
            files = memory_files(Path(root))
            out[f"store:{name}"] = [len(files), sum(1 for p in files if list(scan_file(str(p))))]
        times = {}
        for name, text in job["timed"].items():
            times[name] = timed(by_file, text, job["repeat"].get(name, 1))
        out["times"] = times
    return out


# --- report -------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=2000, help="size of the generated store")
    parser.add_argument("--detect-secrets-python", help="an interpreter with detect-secrets")
    parser.add_argument("--as-detect-secrets", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.as_detect_secrets:
        print(json.dumps(detect_secrets_figures(json.load(sys.stdin))))
        return

    sys.path.insert(0, str(REPO))
    from memctl.core.secrets import scan

    labelled = load_labelled()
    with tempfile.TemporaryDirectory(prefix="memctl-secrets-bench-") as work:
        report(args, scan, labelled, Path(work) / "store")


def report(args: argparse.Namespace, scan: Callable, labelled: ModuleType, store: Path) -> None:
    subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), str(store), str(args.notes)],
                   check=True, capture_output=True)
    stores = {"sample_memory": REPO / "sample_memory", f"gen_corpus {args.notes}": store}
    corpus = memory_files(store)
    one_kb = notes_of_size(corpus, 1_000)
    timed_inputs = {"1 KB note": one_kb, "1 MB note": notes_of_size(corpus, MB), **hostile_inputs()}
    repeat = {"1 KB note": 200, "1 MB note": 3}

    found = [scan(t) for t, _k, _s in labelled.SECRETS]
    right = sum(1 for f, (_t, k, _s) in zip(found, labelled.SECRETS, strict=True) if [x.kind for x in f] == [k])
    flagged = [t for t, _w in labelled.NON_SECRETS if scan(t)]
    n_secrets, n_plain = len(labelled.SECRETS), len(labelled.NON_SECRETS)
    memctl_col = {
        "recall": f"{sum(map(bool, found))}/{n_secrets} (right kind {right})",
        "fp": f"{len(flagged)}/{n_plain}",
    }
    for name, root in stores.items():
        files = memory_files(Path(root))
        memctl_col[f"store:{name}"] = f"{sum(1 for p in files if scan(p.read_text(encoding='utf-8')))}/{len(files)} files"
    for name, text in timed_inputs.items():
        seconds = timed(scan, text, repeat.get(name, 1))
        memctl_col[f"time:{name}"] = _seconds(seconds, len(text))

    ds_col: dict[str, str] | None = None
    ds_line: str | None = None
    python = args.detect_secrets_python
    if python is None and importlib.util.find_spec("detect_secrets") is not None:
        python = sys.executable
    if python:
        job = {"stores": {k: str(v) for k, v in stores.items()}, "timed": timed_inputs, "repeat": {"1 KB note": 20}}
        result = subprocess.run([python, str(Path(__file__).resolve()), "--as-detect-secrets"],
                                input=json.dumps(job), capture_output=True, text=True, check=True)
        ds = json.loads(result.stdout)
        ds_col = {
            "recall": f"{sum(ds['file']['secrets'])}/{n_secrets}",
            "fp": f"{sum(ds['file']['non_secrets'])}/{n_plain}",
        }
        for name in stores:
            total, hit = ds[f"store:{name}"]
            ds_col[f"store:{name}"] = f"{hit}/{total} files"
        for name, text in timed_inputs.items():
            ds_col[f"time:{name}"] = _seconds(ds["times"][name], len(text))
        ds_line = (f"detect-secrets `scan_line` (eager ad-hoc mode) on the labelled set: recall "
                   f"{sum(ds['line']['secrets'])}/{n_secrets}, false positives "
                   f"{sum(ds['line']['non_secrets'])}/{n_plain}")
        missed = [k for (_t, k, _s), hit in zip(labelled.SECRETS, ds["file"]["secrets"], strict=True) if not hit]
        flagged_ds = [w for (_t, w), hit in zip(labelled.NON_SECRETS, ds["file"]["non_secrets"], strict=True) if hit]

    labels = {"recall": "labelled secrets found", "fp": "labelled non-secrets reported (false positives)"}
    for key in memctl_col:
        if key.startswith("store:"):
            labels[key] = f"{key[6:]}: files with a finding"
        elif key.startswith("time:"):
            labels[key] = f"scan time, {key[5:]}"
    header = "| figure | memctl |" + (" detect-secrets (scan_file) |" if ds_col else "")
    print(f"Python {sys.version.split()[0]}; labelled set: {n_secrets} secrets, {n_plain} non-secrets\n")
    print(header)
    print("|---|---|" + ("---|" if ds_col else ""))
    for key, label in labels.items():
        print(f"| {label} | {memctl_col[key]} |" + (f" {ds_col[key]} |" if ds_col else ""))
    if flagged:
        print("\nmemctl false positives:", *flagged, sep="\n  ")
    if ds_col:
        print(f"\n{ds_line}")
        print("detect-secrets missed:", ", ".join(missed) or "nothing")
        print("detect-secrets flagged:", ", ".join(flagged_ds) or "nothing")


def _seconds(seconds: float, size: int) -> str:
    per_mb = seconds / (size / MB)
    shown = f"{seconds * 1000:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"
    return f"{shown} ({per_mb * 1000:.0f} ms/MB)" if size >= 50_000 else shown


if __name__ == "__main__":
    main()
