"""The GPU path (device = "cuda"): does it keep the CPU's numbers and claims, and what does recording cost?

Question (issue 30): on a CUDA device, (1) do float64 runs equal the CPU's, (2) does every scenario's claims
hold, and (3) what is an instrumented Trainer.step() against a plain cuDNN step (torch.nn.RNN/GRU/LSTM, same
weights, batches, loss, optimizer and clipping), and a fully recorded one (detail, Jacobians, full spectrum)?
Times are medians of paired, interleaved repetitions with torch.cuda.synchronize() around each step.

    python benchmarks/bench_cuda.py --json out.json            # all three parts (needs CUDA)
    python benchmarks/bench_cuda.py --parts timing --reps 20
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
import record  # noqa: E402 (benchmarks/record.py, beside this script)
import torch  # noqa: E402
from bench_step import BATCH, CLIP, POOL, PlainStep, cycling  # noqa: E402
from gradflow.core.claim_checks import check_claims  # noqa: E402
from gradflow.core.config import Config  # noqa: E402
from gradflow.core.presets import load_preset, preset_names  # noqa: E402
from gradflow.core.trainer import Trainer  # noqa: E402

EQUALITY_CASES = [dict(model="rnn", num_layers=2, bidirectional=True), dict(model="gru", num_layers=2, bidirectional=True),
                  dict(model="lstm", num_layers=2, bidirectional=True), dict(model="lru"), dict(model="mingru"),
                  dict(model="minlstm")]


def equality(device: str, steps: int = 3) -> list[dict]:
    """float64, cpu against `device`: the largest relative difference of loss, ‖g‖ and ‖∂L/∂h_t‖ over `steps`."""
    found = []
    for case in EQUALITY_CASES:
        config = Config(seq_len=50, hidden_size=32, precision="float64", **case)
        cpu, other = Trainer(config), Trainer(config.replace(device=device))
        worst = 0.0
        for _ in range(steps):
            a, b = cpu.step(), other.step()
            for x, y in ((a.loss, b.loss), (a.grad_norm, b.grad_norm), (a.dh_norms, b.dh_norms)):
                x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
                worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(np.abs(x), 1e-300))))
        found.append({"case": case, "max_rel_diff": worst})
        print(f"float64 cpu vs {device} {case}: max relative difference {worst:.2e}", flush=True)
    return found


def on_device(preset, device: str):
    """The preset with every run's config on `device`."""
    return dataclasses.replace(preset, config=preset.config.replace(device=device),
                               runs=tuple((label, c.replace(device=device)) for label, c in preset.runs))


def claims(device: str, names: list[str]) -> list[dict]:
    found = []
    for name in names:
        preset = load_preset(name)
        start = time.perf_counter()
        outcomes = check_claims(on_device(preset, device))
        failed = [{"text": o.claim.text, "measured": o.measured} for o in outcomes if not o.holds]
        found.append({"preset": name, "claims": len(outcomes), "failed": failed,
                      "seconds": time.perf_counter() - start})
        print(f"claims on {device} {name}: {len(outcomes) - len(failed)}/{len(outcomes)} hold"
              + "".join(f"\n    FAILS {f['text']!r}: {f['measured']}" for f in failed), flush=True)
    return found


def _timed(step, device: str) -> float:
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    step()
    sync()
    return (time.perf_counter() - start) * 1e3


def timing(device: str, cells: list[str], hiddens: list[int], seq_len: int, reps: int, warmup: int) -> list[dict]:
    found = []
    for cell in cells:
        for hidden in hiddens:
            config = Config(model=cell, hidden_size=hidden, seq_len=seq_len, batch_size=BATCH, task="adding",
                            clip=CLIP, device=device)
            trainer = Trainer(config)
            plain = PlainStep(trainer)
            plain.rnn.to(device)
            plain.head.to(device)
            batches = [trainer.task.next_batch() for _ in range(POOL)]
            trainer.task.next_batch = cycling(batches)
            moved = [dataclasses.replace(b, inputs=b.inputs.to(device), targets=b.targets.to(device)) for b in batches]
            plain_batches = cycling(moved)
            runs = {"plain": lambda plain=plain, batch=plain_batches: plain.step(batch()),
                    "instrumented": lambda trainer=trainer: trainer.step(detail=False),
                    "recorded": lambda trainer=trainer: trainer.step(detail=True, jacobians=True, spectrum=True)}
            times: dict[str, list[float]] = {name: [] for name in runs}
            for rep in range(warmup + reps):
                for name in list(runs)[rep % 3:] + list(runs)[:rep % 3]:
                    elapsed = _timed(runs[name], device)
                    if rep >= warmup:
                        times[name].append(elapsed)
            med = {name: statistics.median(v) for name, v in times.items()}
            ratio = statistics.median(a / b for a, b in zip(times["instrumented"], times["plain"]))
            found.append({"cell": cell, "hidden_size": hidden, "seq_len": seq_len, "batch_size": BATCH,
                          "median_ms": med, "ratio": ratio, "reps": reps})
            print(f"{cell} H={hidden} T={seq_len}: plain {med['plain']:.1f} ms, instrumented "
                  f"{med['instrumented']:.1f} ms ({ratio:.2f}x), fully recorded {med['recorded']:.0f} ms", flush=True)
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--parts", default="equality,claims,timing", help="comma-separated subset")
    parser.add_argument("--cells", default="rnn,gru,lstm")
    parser.add_argument("--hidden", default="256,1024")
    parser.add_argument("--seq-len", type=int, default=100)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--presets", default=",".join(preset_names()), help="the claims part's scenarios")
    parser.add_argument("--device", default="cuda", help="cpu: a smoke run of the same code where there is no GPU")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_cuda: no CUDA device here", file=sys.stderr)
        return 2
    parts = args.parts.split(",")
    run = record.Run()
    result = {"device": torch.cuda.get_device_name() if args.device == "cuda" else args.device, "cuda": torch.version.cuda}
    if "equality" in parts:
        result["equality"] = equality(args.device)
    if "timing" in parts:
        result["timing"] = timing(args.device, args.cells.split(","), [int(h) for h in args.hidden.split(",")], args.seq_len,
                                  args.reps, args.warmup)
    if "claims" in parts:
        result["claims"] = claims(args.device, args.presets.split(","))
    if args.json:
        run.save(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
