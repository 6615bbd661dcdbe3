"""The same benchmarks on two revisions of the packages, alternated in one run: did a change move the figures?

``python benchmarks/revisions.py --base REV [--bench "pk_bench.py --commits 20" ...] [--rounds N]`` checks out
``REV`` into a temporary git worktree and runs each benchmark script of the working tree ``--rounds`` times
against each revision's ``packages/*/src`` (through ``PYTHONPATH``, in the interpreter running this script),
base and head taking turns so that a load change on the machine touches both alike. Every timing in the
scripts' result files (a number under a key ending in ``_s``) is taken as its median over the rounds, per
revision, and reported as head / base. Baselines measured by the scripts themselves (raw Parquet,
pypaimon) run the same code on both sides: their ratios show the run's noise. The benchmark scripts are
the working tree's, so they must only use what both revisions offer.

Results go to stdout and to ``results-revisions.md`` / ``.json`` in ``--output-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness import environment, load_average, median, write_results

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = Path(__file__).resolve().parent
PACKAGES = ("core", "storage", "testing", "spark")
# The hot paths of paimon-core, small enough for a few minutes per round on two cores.
DEFAULT_BENCHES = (
    "pk_bench.py --commits 20 --commit-rows 10000 --key-space 100000 --rounds 3",
    "write_bench.py --rows 200000 --rounds 3",
)


_SUMMARIES = ("mean_", "min_", "max_")  # a script's spread of one figure: the rounds here give their own


def timings(payload: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    """Every number under a key ending in ``_s`` in a results document, by its path (``a/b/wall_s``), but
    the summaries of a figure's spread (``mean_wall_s``, ``min_…``, ``max_…``)."""
    if isinstance(payload, dict):
        for key, value in payload.items():
            path = f"{prefix}/{key}" if prefix else str(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and str(key).endswith("_s"):
                if not str(key).startswith(_SUMMARIES):
                    yield path, float(value)
            else:
                yield from timings(value, path)
    elif isinstance(payload, list):
        for index, value in enumerate(payload):
            yield from timings(value, f"{prefix}[{index}]")


def run_bench(command: str, tree: Path, output_dir: Path) -> dict[str, float]:
    """One run of ``command`` (a script of benchmarks/ and its arguments) on ``tree``'s packages."""
    script, *arguments = shlex.split(command)
    output_dir.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(tree / "packages" / p / "src") for p in PACKAGES)}
    subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments, "--output-dir", str(output_dir)],
        env=env,
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    found: dict[str, float] = {}
    for result in sorted(output_dir.glob("*.json")):
        for path, seconds in timings(json.loads(result.read_text(encoding="utf-8"))):
            found[f"{script}: {path}"] = seconds
    return found


def compare(base: Path, head: Path, benches: list[str], rounds: int, scratch: Path) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {"base": {}, "head": {}}
    for round_ in range(rounds):
        order = (("base", base), ("head", head)) if round_ % 2 == 0 else (("head", head), ("base", base))
        for bench_no, command in enumerate(benches):
            for side, tree in order:
                print(f"round {round_ + 1}/{rounds}: {side}: {command}", flush=True)
                found = run_bench(command, tree, scratch / f"{side}-{round_}-{bench_no}")
                for metric, seconds in found.items():
                    samples[side].setdefault(metric, []).append(seconds)
    metrics = sorted(set(samples["base"]) & set(samples["head"]))
    rows = []
    for metric in metrics:
        before, after = median(samples["base"][metric]), median(samples["head"][metric])
        rows.append(
            {"metric": metric, "base_s": before, "head_s": after, "ratio": after / before if before else None}
        )
    return {"rows": rows, "only_base": sorted(set(samples["base"]) - set(metrics)),
            "only_head": sorted(set(samples["head"]) - set(metrics))}  # fmt: skip


def render(args: argparse.Namespace, base_commit: str, head_commit: str, figures: dict[str, Any]) -> str:
    lines = [
        "# Benchmarks on two revisions",
        "",
        f"Base `{base_commit}` ({args.base}), head `{head_commit}` (the working tree); {args.rounds} rounds, "
        "alternated; medians per revision. Written by `benchmarks/revisions.py`.",
        "",
        "| benchmark: figure | base s | head s | head / base |",
        "|---|---:|---:|---:|",
    ]
    for row in figures["rows"]:
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}"
        lines.append(f"| {row['metric']} | {row['base_s']:.4f} | {row['head_s']:.4f} | {ratio} |")
    if figures["only_base"] or figures["only_head"]:
        lines += ["", f"Only in base: {figures['only_base']}; only in head: {figures['only_head']}."]
    return "\n".join(lines) + "\n"


def _commit(rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the git revision to compare the working tree with")
    parser.add_argument("--bench", action="append", help="a script of benchmarks/ and its arguments")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output-dir", type=Path, default=BENCHMARKS)
    args = parser.parse_args()
    benches = args.bench or list(DEFAULT_BENCHES)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="paimon-revisions-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), args.base], check=True
        )
        try:
            figures = compare(base, ROOT, benches, args.rounds, Path(tmp) / "runs")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    base_commit, head_commit = _commit(args.base), _commit("HEAD")
    markdown = render(args, base_commit, head_commit, figures)
    payload = {**environment(), "base": base_commit, "head": head_commit, "benches": benches,
               "rounds": args.rounds, "load_average": {"before": load_before[0], "after": load_average()[0]},
               **figures}  # fmt: skip
    print(markdown)
    write_results(args.output_dir, "results-revisions", markdown, payload)


if __name__ == "__main__":
    main()
