"""The least an instrumented LSTM step must do, against the plain nn.LSTM step (issue 28's ≤ 1.0× target).

Question: can the instrumented LSTM step (Trainer.step: the hand-written BPTT of core/kernels/lstm.py, compiled by
core/native where it builds) ever be as fast as the plain step (nn.LSTM, oneDNN's fused kernel, + nn.Linear,
cross-entropy, clipping, Adam: bench_step.PlainStep)? It records ‖∂L/∂h_t‖ for every t, so it steps through time
itself, one matrix product per step each way, and it takes the spectrum of W_hh every step. This times, side by
side (interleaved, one thread, the medians):

- plain:          bench_step.PlainStep.step, the whole plain training step;
- products:       only the matrix products the engine makes, as it makes them: forward, per step
                  [1, x_t, h_{t-1}] (B, 1+I+H) @ [b, W_ih, W_hh]ᵀ through oneDNN's packed weight (core.torch_private);
                  backward, per step ∂L/∂a_{t+1} (B, 4H) @ W_hh, packed the same; then the weight gradients,
                  one (4H, T·B) @ (T·B, 1+I+H) product;
- spectrum:       what Trainer.step adds for W_hh's spectrum (the cell's spectrum, as bench_step times it);
- instrumented:   Trainer.step(detail=False), the whole instrumented step.

floor = (products + spectrum) / plain: no gate, no loss, no optimizer counted. Where it is above 1, no
instrumented step built this way meets 1.0× on that machine.

    python benchmarks/bench_floor.py                      # writes benchmarks/results/floor.json
    python benchmarks/bench_floor.py --reps 20 --json out.json
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import record  # benchmarks/record.py, beside this script
import torch
from bench_step import BATCH, CLIP, POOL, PlainStep, cycling
from gradflow.core import torch_private
from gradflow.core.config import Config
from gradflow.core.spectrum import SpectrumMeter
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer

SIZES = ((64, 100), (128, 200))   # (hidden_size, seq_len), as bench_step
WARMUP = 5


def products(trainer: Trainer):
    """A callable making the engine's matrix products for one step, on buffers of the step's shapes."""
    cfg = trainer.config
    T, B, H = cfg.seq_len, cfg.batch_size, cfg.hidden_size
    K = 1 + trainer.model.rnn.input_size + H
    xh, w_cat = torch.randn(T + 1, B, K), torch.randn(4 * H, K)       # [1, x, h] rows; [b, W_ih, W_hh]
    d_a, w_hh = torch.randn(T, B, 4 * H), torch.randn(4 * H, H)
    gates, dh = torch.empty(T, B, 4 * H), torch.zeros(T, B, H)
    packed = torch_private.pack_linear_weight(w_cat, B)
    packed_hh = torch_private.pack_linear_weight(w_hh.t().contiguous(), B)

    def run():
        for t in range(T):
            gates[t].copy_(torch_private.packed_linear(xh[t], packed))   # (B, 4H)
        for t in range(T - 1, 0, -1):
            dh[t - 1].add_(torch_private.packed_linear(d_a[t], packed_hh))   # (B, H)
        d_a.view(-1, 4 * H).t().mm(xh[:-1].reshape(-1, K))             # (4H, K): every weight's gradient
    return run


def measure(hidden: int, seq_len: int, reps: int) -> dict:
    config = Config(model="lstm", hidden_size=hidden, seq_len=seq_len, batch_size=BATCH, task="text", clip=CLIP)
    trainer = Trainer(config)
    plain = PlainStep(trainer)
    batches = [trainer.task.next_batch() for _ in range(POOL)]
    trainer.task.next_batch = cycling(batches)
    plain_batches = cycling(batches)
    trace, meter = Trace(), SpectrumMeter()
    with torch.no_grad():
        trainer.model(batches[0].inputs, None, None, trace)
    runs = {"plain": lambda: plain.step(plain_batches()), "products": products(trainer),
            "spectrum": lambda: trainer.cell.spectrum(trainer.model, trace, meter, full=False),
            "instrumented": lambda: trainer.step(detail=False)}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for rep in range(WARMUP + reps):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            if rep >= WARMUP:
                times[name].append((time.perf_counter() - start) * 1e3)
    ms = {name: statistics.median(values) for name, values in times.items()}
    return {"hidden_size": hidden, "seq_len": seq_len, "batch_size": BATCH, "reps": reps, "median_ms": ms,
            "floor": (ms["products"] + ms["spectrum"]) / ms["plain"], "instrumented": ms["instrumented"] / ms["plain"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "floor.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    run = record.Run()
    results = [measure(hidden, seq_len, args.reps) for hidden, seq_len in SIZES]
    for r in results:
        ms = r["median_ms"]
        print(f"lstm {r['hidden_size']}x{r['seq_len']}: plain {ms['plain']:.2f} ms, products {ms['products']:.2f}, "
              f"spectrum {ms['spectrum']:.2f}, instrumented {ms['instrumented']:.2f} | floor {r['floor']:.2f}x, "
              f"instrumented {r['instrumented']:.2f}x plain")
    run.save(args.json, {"results": results},
             summary={f"lstm {r['hidden_size']}x{r['seq_len']} floor/plain": (r["floor"], "lower") for r in results})


if __name__ == "__main__":
    main()
