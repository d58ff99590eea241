"""Runs one benchmark for two versions of the code side by side and reports the ratios and regressions.

    python benchmarks/compare.py BASE [--rounds 3] [--threshold 0.1] [--json PATH] -- BENCH [its options]
    python benchmarks/compare.py HEAD~1 -- bench_startup.py
    python benchmarks/compare.py main --rounds 3 -- bench_step.py --quick --cells lstm

BASE is any commit (checked out in a temporary git worktree); the other side is this checkout as it is, its
uncommitted changes included. Both sides run this checkout's copy of BENCH, which imports the gradflow of its
side (a link tree on PYTHONPATH laid out as pyproject.toml's package-dir maps the folders), in fresh processes,
alternating BASE, this, this, BASE, ... so the machine's load hits both alike. Each run's "summary" (see
record.py) gives the numbers; the table shows each one's median per side, this / BASE, and flags a change
worse than `threshold` as a regression.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]


def link_tree(checkout: Path, folder: Path) -> Path:
    """A folder to put on PYTHONPATH that imports `checkout`'s gradflow: gradflow/ with links to the files of
    checkout/gradflow and to the folders pyproject.toml maps beneath it (core/, explorer/, resources/)."""
    mapping = tomllib.loads((checkout / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    package = folder / "gradflow"
    package.mkdir(parents=True)
    for entry in (checkout / mapping["gradflow"]).iterdir():
        (package / entry.name).symlink_to(entry)
    for name, source in mapping.items():
        if name.startswith("gradflow."):
            (package / name.split(".", 1)[1]).symlink_to(checkout / source)
    return folder


def run_side(tree: Path, commit: str, bench: list[str], out: Path) -> dict:
    """One run of the benchmark on the gradflow of `tree`; its result file must name `commit` as measured."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / bench[0]), *bench[1:], "--json", str(out)],
                   env=env, check=True)
    result = json.loads(out.read_text())
    if result["run"]["commit"] != commit:
        raise SystemExit(f"{bench[0]} measured {result['run']['commit']}, not {commit}: is gradflow shadowed?")
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        sys.exit(__doc__)
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=3, help="runs of the benchmark per side (default 3)")
    parser.add_argument("--threshold", type=float, default=0.1,
                        help="a change worse than this fraction is a regression (default 0.1)")
    parser.add_argument("--json", help="also write the comparison here (machine-tagged)")
    args = parser.parse_args(argv[:split])
    bench = argv[split + 1:]
    run = record.Run()
    commit = {side: subprocess.run(["git", "-C", str(ROOT), "rev-parse", ref], capture_output=True, text=True,
                                   check=True).stdout.strip() for side, ref in (("base", args.base), ("this", "HEAD"))}
    base_commit = commit["base"]
    summaries: dict[str, list[dict]] = {"base": [], "this": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        worktree = tmp / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(worktree), base_commit],
                       check=True)
        try:
            trees = {"base": link_tree(worktree, tmp / "tree-base"), "this": link_tree(ROOT, tmp / "tree-this")}
            for i in range(args.rounds):
                for side in ("base", "this") if i % 2 == 0 else ("this", "base"):
                    print(f"--- round {i + 1}/{args.rounds}: {side} ({commit[side][:9]})", flush=True)
                    result = run_side(trees[side], commit[side], bench, tmp / f"{side}-{i}.json")
                    summaries[side].append(result["summary"])
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=True)

    rows = []
    for name, first in summaries["this"][0].items():
        base_values = [s[name]["value"] for s in summaries["base"] if name in s]
        if not base_values:   # a number the base does not report
            continue
        base, this = statistics.median(base_values), statistics.median(s[name]["value"] for s in summaries["this"])
        ratio = this / base if base else float("nan")
        worse = ratio - 1 if first["better"] == "lower" else 1 - ratio
        verdict = "REGRESSION" if worse > args.threshold else "better" if worse < -args.threshold else "same"
        rows.append({"name": name, "better": first["better"], "base": base, "this": this, "ratio": ratio,
                     "verdict": verdict})
    width = max(len(r["name"]) for r in rows)
    print(f"\n{' '.join(bench)}: this checkout against {args.base} ({base_commit[:9]}), medians of "
          f"{args.rounds} runs each, alternating; {run.describe()}")
    print(f"{'':{width}}  {'base':>10} {'this':>10} {'this/base':>9}  better   verdict")
    for r in rows:
        print(f"{r['name']:{width}}  {r['base']:10.4g} {r['this']:10.4g} {r['ratio']:9.3f}  {r['better']:<7}  "
              f"{r['verdict']}")
    if args.json:
        run.save(args.json, {"bench": bench, "base": base_commit, "rounds": args.rounds,
                             "threshold": args.threshold, "rows": rows, "summaries": summaries})
    return 1 if any(r["verdict"] == "REGRESSION" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
