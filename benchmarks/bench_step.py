"""Instrumented Trainer.step() against the plain torch.nn training step.

Question: what does recording everything cost? For each cell (RNN, GRU, LSTM; the diagonal
cells minGRU, minLSTM, LRU), size (h=64, T=100, B=32 and h=128, T=200, B=32; the diagonal cells
at h=64, B=32 and T = 100, 200, 400, to show how the cost grows with T; --sizes for others, e.g. the
large cells 256x100,1024x100) and loss (a character language
model: cross-entropy at every step over the built-in text's ~28-symbol vocabulary;
the adding problem: MSE at the last step) this times, side by side:

- plain:        a torch.nn.RNN/GRU/LSTM + nn.Linear head with the same initial
                weights, sizes, batches, loss, optimizer and clipping:
                zero_grad / forward / loss / backward / clip_grad_norm_ / step / loss.item();
                for a diagonal cell, the peer a user would write: the same layers and weights,
                the recurrence h_t = a_t ⊙ h_{t−1} + b_t as a Python loop under autograd
- instrumented: Trainer.step(detail=False): the same update plus every recorded
                number: ‖∂L/∂h_t‖ for every t and row (and ‖∂L/∂c_t‖ for the LSTM),
                per-parameter gradient norms, norm before/after clipping, the spectrum of
                W_hh (every eigenvalue and singular value up to H = 128, else ρ and σ_max:
                core.spectrum), the Record.
- detail:       Trainer.step(detail=True): as above plus sample 0's hidden states,
                cell states and gates and the contributions through time (what the
                GUI asks for on the steps it draws).

Beside them, timed alone: the spectrum of W_hh; what Trainer.step(jacobians=True) adds (only when asked: the
Jacobians panel on screen), the Jacobians through time of layer 1, sample 0 (Cell.jacobians); and what
Trainer.step(lyapunov=True) adds (the Lyapunov panel on screen, `gradflow run --lyapunov`), the same with their
Lyapunov spectrum and long-term singular values (Cell.jacobians(spectrum=True), core.lyapunov); LYAPUNOV_REPS
repetitions each; for a diagonal cell, what run.sensitivity() costs on one batch
(core.sensitivity.measure: a forward, the gradient of θ and the tangent scan of every row; LYAPUNOV_REPS repetitions).

The three run interleaved, one step each per repetition (their order rotates
between repetitions), for many repetitions; the table shows median step times and
the median over repetitions of the paired ratio instrumented / plain.

    python benchmarks/bench_step.py                 # full run, writes benchmarks/results/step.json
    python benchmarks/bench_step.py --quick         # smoke run: few repetitions
    python benchmarks/bench_step.py --json out.json --reps 200 --threads 1
    python benchmarks/bench_step.py --cells lstm --native off   # the LSTM's Python loops, not core/native
    python benchmarks/bench_step.py --cells mingru,minlstm,lru --json benchmarks/results/step_diagonal.json
    python benchmarks/bench_step.py --cells rnn --sizes 256x100,1024x100 --reps 12 --json benchmarks/results/step_large.json
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from pathlib import Path

import record  # benchmarks/record.py, beside this script

ROOT = Path(__file__).resolve().parents[1]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from gradflow.core import cells, native  # noqa: E402
from gradflow.core.cells.families import DiagonalCell  # noqa: E402
from gradflow.core.config import Config  # noqa: E402
from gradflow.core.sensitivity import measure as measure_sensitivity  # noqa: E402
from gradflow.core.spectrum import FULL_SPECTRUM_MAX_SIZE, SpectrumMeter  # noqa: E402
from gradflow.core.trace import Trace  # noqa: E402
from gradflow.core.trainer import Trainer  # noqa: E402
from torch import nn  # noqa: E402

TARGETS = {"rnn": 1.1, "gru": 1.3, "lstm": 1.3,          # issue 6: instrumented / plain, every step
           "mingru": 1.3, "minlstm": 1.3, "lru": 1.3, "s6": 1.3}    # issue 14 (s6: as the diagonal cells)
LARGE, LARGE_TARGET = 256, 1.2                     # issue 22: from H = 256 on, every cell ≤ 1.2×
SIZES = ((64, 100), (128, 200))                   # (hidden_size, seq_len); --sizes 256x100,1024x100: issue 22
DIAGONAL_SIZES = ((64, 100), (64, 200), (64, 400))
LOSSES = {"lm": "text", "adding": "adding"}        # label -> task
BATCH = 32
CLIP = 1.0
POOL = 8                                          # distinct batches, cycled by both sides
LYAPUNOV_REPS = 3                                 # the Lyapunov measurement is slow at T = 400: a few suffice


class PlainStep:
    """The reference: a plain torch.nn module trained the ordinary way, same weights as `trainer.model`."""

    def __init__(self, trainer: Trainer):
        cfg, net = trainer.config, trainer.model
        module = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[cfg.model]
        kwargs = {"nonlinearity": cfg.activation} if cfg.model == "rnn" else {}
        self.rnn = module(net.rnn.input_size, cfg.hidden_size, cfg.num_layers,
                          bidirectional=cfg.bidirectional, **kwargs)
        self.head = nn.Linear(net.head.in_features, net.head.out_features)
        self.rnn.load_state_dict(net.rnn.state_dict())
        self.head.load_state_dict(net.head.state_dict())
        self._setup(trainer, list(self.rnn.parameters()) + list(self.head.parameters()))

    def _setup(self, trainer: Trainer, params):
        cfg = trainer.config
        self.params = params
        optimizer = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}[cfg.optimizer]
        self.optimizer = optimizer(self.params, lr=cfg.lr)   # torch.optim's own class, as a user would
        self.ce = trainer.task.loss == "ce"
        self.last = cfg.loss_positions == "last"
        self.clip = cfg.clip

    def forward(self, inputs):
        """inputs (T, B, I) -> last layer's outputs (T, B, H·D)."""
        return self.rnn(inputs)[0]

    def step(self, batch) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        out = self.forward(batch.inputs)                      # (T, B, H)
        if self.last:
            out = out[-1:]
        outputs = self.head(out)                              # (T or 1, B, O)
        targets = batch.targets[-1:] if self.last else batch.targets
        if self.ce:
            loss = F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))
        else:
            loss = F.mse_loss(outputs, targets)
        loss.backward()
        if self.clip is not None:
            nn.utils.clip_grad_norm_(self.params, self.clip)
        self.optimizer.step()
        return loss.item()


class PlainDiagonalStep(PlainStep):
    """The peer of a diagonal cell (core.diagonal): the same layers and weights (a copy), the recurrence
    h_t = a_t ⊙ h_{t−1} + b_t written as a loop under autograd, as a user would (one direction)."""

    def __init__(self, trainer: Trainer):
        self.net = copy.deepcopy(trainer.model)
        self.head = self.net.head
        self._setup(trainer, list(self.net.parameters()))

    def forward(self, inputs):
        net = self.net
        u = inputs if net.encoder is None else net.encoder(inputs)   # (T, B, I) or (T, B, H): the LRU's encoding
        for cell in net.rows:
            a, b, _ = cell.recurrence(u)                      # a (T, B, H) or (H,), b (T, B, H)
            steps = a.unbind(0) if a.dim() == 3 else (a,) * b.shape[0]
            h, hs = torch.zeros_like(b[0]), []
            for a_t, b_t in zip(steps, b.unbind(0)):         # unbind: b[t] in the loop would cost O(T²) backward
                h = a_t * h + b_t
                hs.append(h)
            h = torch.stack(hs)                               # (T, B, H)
            u = cell.readout(h, u)                            # the LRU's residual block; h itself otherwise
        return u


def sizes(text: str) -> tuple[tuple[int, int], ...]:
    """"256x100,1024x100" -> ((256, 100), (1024, 100))."""
    try:
        return tuple(tuple(int(n) for n in size.split("x")) for size in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes are HxT, comma-separated (e.g. 256x100,1024x100), got {text!r}") \
            from None


def cycling(batches):
    state = {"i": 0}

    def next_batch():
        batch = batches[state["i"] % len(batches)]
        state["i"] += 1
        return batch
    return next_batch


def diagonal(cell: str) -> bool:
    return isinstance(cells.cell_for(cell), DiagonalCell)


def measure(cell: str, hidden: int, seq_len: int, loss: str, reps: int, warmup: int, engine: str = "bptt") -> dict:
    config = Config(model=cell, hidden_size=hidden, seq_len=seq_len, batch_size=BATCH, task=LOSSES[loss],
                    clip=CLIP)
    trainer = Trainer(config)
    trainer.model.engine = engine
    plain = (PlainDiagonalStep if diagonal(cell) else PlainStep)(trainer)
    batches = [trainer.task.next_batch() for _ in range(POOL)]
    trainer.task.next_batch = cycling(batches)
    plain_batches = cycling(batches)
    runs = {
        "plain": lambda: plain.step(plain_batches()),
        "instrumented": lambda: trainer.step(detail=False),
        "detail": lambda: trainer.step(detail=True),
    }
    times = {name: [] for name in runs}
    spectrum_ms, meter = [], SpectrumMeter()   # a meter of its own: the trainer's warm start stays its own
    names = list(runs)
    for rep in range(warmup + reps):
        order = names[rep % 3:] + names[:rep % 3]  # rotate who goes first
        for name in order:
            start = time.perf_counter()
            runs[name]()
            elapsed = time.perf_counter() - start
            if rep >= warmup:
                times[name].append(elapsed * 1e3)
        if rep >= warmup:
            trace = Trace()
            with torch.no_grad():
                trainer.model(batches[0].inputs, None, None, trace)
            start = time.perf_counter()
            trainer.cell.spectrum(trainer.model, trace, meter, full=False)
            spectrum_ms.append((time.perf_counter() - start) * 1e3)
    extras_ms: dict[bool, list[float]] = {False: [], True: []}   # spectrum=False: the Jacobians; True: with Lyapunov
    for _ in range(LYAPUNOV_REPS):
        trace = Trace()
        trainer.model(batches[0].inputs, None, None, trace)
        for spectrum in (False, True):
            start = time.perf_counter()
            trainer.cell.jacobians(trainer.model, trace, batches[0].inputs[:, 0], None, config, spectrum=spectrum)
            extras_ms[spectrum].append((time.perf_counter() - start) * 1e3)
    sensitivity_ms = []
    for _ in range(LYAPUNOV_REPS if trainer.cell.no_sensitivity(config) is None else 0):
        inputs, targets = batches[0].inputs, batches[0].targets
        start = time.perf_counter()
        measure_sensitivity(trainer.model, trainer.cell.recurrence_parameter, inputs,
                            lambda outputs, targets=targets: trainer._loss(outputs, targets))
        sensitivity_ms.append((time.perf_counter() - start) * 1e3)
    med = {name: statistics.median(v) for name, v in times.items()}
    target = LARGE_TARGET if hidden >= LARGE else TARGETS[cell]
    paired = {name: statistics.median(a / b for a, b in zip(times[name], times["plain"]))
              for name in ("instrumented", "detail")}
    return {
        "cell": cell, "hidden_size": hidden, "seq_len": seq_len, "batch_size": BATCH, "loss": loss,
        "task": config.task, "loss_positions": config.loss_positions, "vocab_or_output": trainer.task.output_size,
        "optimizer": config.optimizer, "clip": CLIP, "reps": reps,
        "engine": engine,
        "median_ms": med,
        "spectrum_ms": statistics.median(spectrum_ms),
        "jacobians_ms": statistics.median(extras_ms[False]),
        "lyapunov_ms": statistics.median(extras_ms[True]),
        "sensitivity_ms": statistics.median(sensitivity_ms) if sensitivity_ms else None,
        "ratio": paired["instrumented"], "ratio_detail": paired["detail"],
        "ratio_of_medians": med["instrumented"] / med["plain"],
        "target": target, "met": paired["instrumented"] <= target,
        "times_ms": times,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "step.json"),
                        help="where to write the results (default: benchmarks/results/step.json)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 5 repetitions after 2 warm-up steps")
    parser.add_argument("--reps", type=int, default=60, help="timed repetitions per case (default 60)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed repetitions first (default 5)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch.set_num_threads for both sides (default 1; 0: torch's own default)")
    parser.add_argument("--flush-denormal", action="store_true",
                        help="torch.set_flush_denormal(True) for both sides (default: off, as the app runs)")
    parser.add_argument("--cells", default="rnn,gru,lstm",
                        help="comma-separated subset of rnn,gru,lstm,mingru,minlstm,lru,s6")
    parser.add_argument("--sizes", type=sizes,
                        help="comma-separated HxT, e.g. 256x100,1024x100 (default: 64x100,128x200; the diagonal "
                             "cells 64x100,64x200,64x400)")
    parser.add_argument("--losses", default=",".join(LOSSES), help=f"comma-separated subset of {','.join(LOSSES)}")
    parser.add_argument("--engine", default="bptt", choices=("bptt", "unrolled"),
                        help="RecurrentNet engine of the instrumented side (default bptt; unrolled: the slow reference)")
    parser.add_argument("--native", default="auto", choices=("auto", "on", "off"),
                        help="the compiled LSTM loops (core/native): auto = if built, on = build first if needed, "
                             "off = the Python loops (GRADFLOW_NATIVE=0)")
    args = parser.parse_args(argv)
    if args.native == "off":
        os.environ["GRADFLOW_NATIVE"] = "0"
    elif args.native == "on":
        native.build()
    reps, warmup = (5, 2) if args.quick else (args.reps, args.warmup)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.flush_denormal:
        torch.set_flush_denormal(True)

    run = record.Run()
    env = {"engine": args.engine, "native_lstm": native.kernel() is not None,
           "torch_threads": torch.get_num_threads(), "flush_denormal": args.flush_denormal}
    print(run.describe())
    print(f"{env['torch_threads']} torch threads, "
          f"flush_denormal={args.flush_denormal}, {reps} reps (+{warmup} warm-up), batch {BATCH}, "
          f"clip {CLIP}, optimizer {Config().optimizer}")
    if args.engine == "bptt":
        print("engine: hand-written BPTT (core.bptt.RowBPTT) in every case; truncation, multi-layer,"
              " bidirectional and carried state run on the same engine (no fallback)")
        print("LSTM row loops: " + ("compiled (core/native)" if env["native_lstm"] else "Python"))
    else:
        print("engine: unrolled reference (h_t.retain_grad() on every step)")
    header = (f"{'cell':5} {'h':>4} {'T':>4} {'loss':7} {'plain ms':>9} {'instr ms':>9} {'ratio':>6} "
              f"{'detail ms':>9} {'ratio':>6} {'spectrum':>8} {'jacobian':>8} {'lyapunov':>8} {'sensitiv':>8} {'target':>6}  met")
    print(header)
    print("-" * len(header))
    results = []
    for cell in args.cells.split(","):
        for hidden, seq_len in args.sizes or (DIAGONAL_SIZES if diagonal(cell) else SIZES):
            for loss in args.losses.split(","):
                r = measure(cell, hidden, seq_len, loss, reps, warmup, args.engine)
                results.append(r)
                m = r["median_ms"]
                sens = "—" if r["sensitivity_ms"] is None else f"{r['sensitivity_ms']:.1f}"
                spec = f"{r['spectrum_ms']:8.2f} {r['jacobians_ms']:8.1f} {r['lyapunov_ms']:8.1f} {sens:>8}"
                print(f"{cell:5} {hidden:4d} {seq_len:4d} {loss:7} {m['plain']:9.2f} {m['instrumented']:9.2f} "
                      f"{r['ratio']:6.2f} {m['detail']:9.2f} {r['ratio_detail']:6.2f} {spec} {r['target']:6.1f}  "
                      f"{'yes' if r['met'] else 'NO'}", flush=True)
    print("ratio: median over repetitions of (instrumented or detail step) / (plain step), interleaved pairs;"
          " spectrum: ms of the instrumented step spent on the spectrum (core.spectrum: eigvals + svdvals of W_hh"
          f" up to {FULL_SPECTRUM_MAX_SIZE} rows, else ρ and σ_max by Krylov; a diagonal cell: its λ or diagonal"
          " over t), timed alone; jacobian: ms of the Jacobians through time (layer 1, sample 0:"
          " Trainer.step(jacobians=True) adds it); lyapunov: the same with their Lyapunov spectrum and long-term"
          " singular values (Trainer.step(lyapunov=True) adds it: the Lyapunov panel), each timed alone; sensitiv: ms of"
          " run.sensitivity() on one batch (diagonal cells: core.sensitivity), timed alone")
    summary = {f"{r['cell']} {r['hidden_size']}x{r['seq_len']} {r['loss']} {side}": (r[key], "lower")
               for r in results for side, key in (("instr/plain", "ratio"), ("detail/plain", "ratio_detail"))}
    print(run.describe())
    run.save(args.json, {"environment": env, "quick": args.quick, "results": results}, summary)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
