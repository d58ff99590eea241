"""Two questions about cells, each a table (h = 64, T = 100, B = 32, task adding, one process, engine_threads()):

(a) float64 over float32: steps/s of a recorded Trainer step (detail = True) per built-in cell, the two
    precisions side by side in one run, interleaved.
(b) a user's cell (tests/core/cells/torch_rnn.py:TanhRNN), fully recorded (Trainer.step(detail=True): ∂L/∂h_t,
    norms, spectrum, zero causes, hidden states: everything a step records), and with Jacobians through time too
    (jacobians=True: what the window asks for at most twice a second while their panel shows), against the plain
    autograd loop a user would write for the same cell (unrolled, loss at the last step, loss.backward(), Adam).

    .venv/bin/python benchmarks/bench_cells.py [--steps N] [--json benchmarks/results/cells.json]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import record  # benchmarks/record.py, beside this script
import torch
import torch.nn.functional as F
from gradflow.core import cells
from gradflow.core.config import Config
from gradflow.core.trainer import Trainer, engine_threads, engine_threads_used

ROOT = Path(__file__).resolve().parents[1]
USER_CELL = f"{ROOT / 'tests/core/cells/torch_rnn.py'}:TanhRNN"
SIZE = dict(hidden_size=64, seq_len=100, batch_size=32, task="adding")


def steps_per_s(step, steps: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - start)


def precision_table(steps: int) -> list[dict]:
    rows = []
    for name in cells.names():
        trainers = {p: Trainer(Config(model=name, precision=p, **SIZE)) for p in ("float32", "float64")}
        rates = {p: [] for p in trainers}
        for _ in range(3):   # interleaved rounds: drift on a shared machine hits both alike
            for p, trainer in trainers.items():
                rates[p].append(steps_per_s(lambda t=trainer: t.step(detail=True), steps // 3, warmup=1))
        best = {p: max(r) for p, r in rates.items()}
        rows.append({"cell": name, "float32_steps_s": best["float32"], "float64_steps_s": best["float64"],
                     "float64_time_over_float32": best["float32"] / best["float64"]})
    return rows


def plain_loop(trainer: Trainer):
    """The loop a user writes for the same cell and data: unrolled, loss at the last step, backward, Adam."""
    torch.manual_seed(0)
    cell = type(trainer.model.rows[0])(trainer.task.input_size, SIZE["hidden_size"])
    head = torch.nn.Linear(SIZE["hidden_size"], trainer.task.output_size)
    optimizer = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-3)

    def step():
        batch = trainer.task.next_batch()
        x, y = batch.inputs.float(), batch.targets.float()         # (T, B, I), (T, B, O)
        h = torch.zeros(x.shape[1], SIZE["hidden_size"])
        for t in range(x.shape[0]):
            h = cell(x[t], h)
        loss = F.mse_loss(head(h), y[-1])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return step


def user_cell_table(steps: int) -> dict:
    trainer = Trainer(Config(model=USER_CELL, **SIZE))
    plain = plain_loop(Trainer(Config(model=USER_CELL, **SIZE)))
    recorded, detail, bare = [], [], []
    with engine_threads_used():     # the plain loop on the engine's thread count too
        for _ in range(3):
            recorded.append(steps_per_s(lambda: trainer.step(detail=True, jacobians=True), steps // 3, warmup=1))
            detail.append(steps_per_s(lambda: trainer.step(detail=True), steps // 3, warmup=1))
            bare.append(steps_per_s(plain, steps // 3, warmup=1))
    return {"recorded_steps_s": max(recorded), "detail_steps_s": max(detail), "plain_steps_s": max(bare),
            "recorded_time_over_plain": max(bare) / max(recorded), "detail_time_over_plain": max(bare) / max(detail)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    run = record.Run()
    table = precision_table(args.steps)
    print("(a) float64 over float32, h = 64, T = 100, B = 32, recorded step (detail)")
    print(f"{'cell':8} {'float32 steps/s':>16} {'float64 steps/s':>16} {'time ×':>7}")
    for row in table:
        print(f"{row['cell']:8} {row['float32_steps_s']:16.1f} {row['float64_steps_s']:16.1f} "
              f"{row['float64_time_over_float32']:7.2f}")
    user = user_cell_table(args.steps)
    print("\n(b) user's TanhRNN file, fully recorded, against the plain autograd loop (h = 64, T = 100, B = 32)")
    print(f"recorded (detail) {user['detail_steps_s']:.1f} steps/s, plain {user['plain_steps_s']:.1f} steps/s: "
          f"recorded takes {user['detail_time_over_plain']:.2f}× the plain loop's time (target ≤ 1.5×)")
    print(f"with Jacobians through time too: {user['recorded_steps_s']:.1f} steps/s, "
          f"{user['recorded_time_over_plain']:.2f}×")
    if args.json:
        run.save(args.json, {"size": SIZE, "torch_threads": engine_threads(), "precision": table, "user_cell": user},
                 summary={"user cell recorded / plain": (user["detail_time_over_plain"], "lower")})


if __name__ == "__main__":
    main()
