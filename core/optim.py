"""The optimizers a Trainer steps (config.optimizer: sgd, adam, rmsprop), on torch's functional optimizer API.

torch.optim's classes import torch._dynamo (the compiler: ~1.3 s, most of a one-step `gradflow run`) the first
time one is built, stepped or zeroed. The update they run is a documented function (torch.optim.adam.adam, ...)
that does not. These classes call it with the arguments and the state torch.optim's own classes pass, so the
numbers are the same bit for bit, and state_dict() has torch.optim's layout: sessions saved by either load in
the other (tests/core/test_optim.py checks both). One parameter group; the hyperparameters are torch's defaults
but lr.
"""
from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

import torch
from torch.optim.adam import adam
from torch.optim.rmsprop import rmsprop
from torch.optim.sgd import sgd


def _step_counter() -> torch.Tensor:
    """A parameter's step count as torch.optim keeps it on CPU (neither capturable nor fused)."""
    return torch.tensor(0.0, dtype=torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32)


def _plain(value: Any) -> Any:
    """A hyperparameter as a session gives it back (a tuple as a list)."""
    return list(value) if isinstance(value, tuple) else value


class Optimizer:
    """torch.optim.Optimizer's interface as the engine uses it: param_groups, state, zero_grad, step,
    state_dict, load_state_dict."""
    torch_class: type[torch.optim.Optimizer]   # the class whose defaults, state and update this reproduces
    buffers: tuple[str, ...] = ()             # per-parameter state beside "step", zeros like the parameter

    def __init__(self, params: Iterable[torch.Tensor], lr: float):
        self.defaults = {name: p.default for name, p in inspect.signature(self.torch_class).parameters.items()
                         if p.default is not inspect.Parameter.empty} | {"lr": lr}
        self.param_groups: list[dict[str, Any]] = [{"params": list(params), **self.defaults}]
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}

    def zero_grad(self, set_to_none: bool = True):
        for p in self.param_groups[0]["params"]:
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_().zero_()

    @torch.no_grad()
    def step(self):
        group = self.param_groups[0]
        params = [p for p in group["params"] if p.grad is not None]
        if self.buffers:
            for p in params:
                if not self.state.get(p):
                    self.state[p] = {"step": _step_counter(), **{
                        name: torch.zeros_like(p, memory_format=torch.preserve_format) for name in self.buffers}}
        self._update(group, params, [p.grad for p in params], [self.state.get(p, {}) for p in params],
                     any(torch.is_complex(p) for p in params))

    def _update(self, group, params, grads, states, has_complex: bool):
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """torch.optim's layout: parameters by index; the state's tensors themselves, not copies."""
        group = self.param_groups[0]
        index = {id(p): i for i, p in enumerate(group["params"])}
        return {"state": {index[id(p)]: s for p, s in self.state.items()},
                "param_groups": [{**{k: v for k, v in group.items() if k != "params"},
                                  "params": list(range(len(group["params"])))}]}

    def load_state_dict(self, state_dict: dict[str, Any]):
        """As torch.optim loads: the saved hyperparameters and state, buffers cast to their parameter's dtype
        and device (a tensor already so is taken as it is), the step count as saved."""
        saved = state_dict["param_groups"]
        params = self.param_groups[0]["params"]
        if len(saved) != 1 or len(saved[0]["params"]) != len(params):
            raise ValueError("loaded state dict does not match the optimizer's one group of "
                             f"{len(params)} parameters")
        changed = sorted(k for k, v in saved[0].items()
                         if k not in ("lr", "params") and _plain(v) != _plain(self.defaults.get(k)))
        if changed:
            raise ValueError(f"loaded state dict sets {', '.join(changed)}: only lr may differ from torch's defaults")
        by_id = dict(zip(saved[0]["params"], params))
        self.state = {by_id[i]: {k: v if k == "step" else v.to(dtype=by_id[i].dtype, device=by_id[i].device)
                                 for k, v in s.items()}
                      for i, s in state_dict["state"].items() if i in by_id}
        self.param_groups = [{**{k: v for k, v in saved[0].items() if k != "params"}, "params": params}]


class Adam(Optimizer):
    torch_class = torch.optim.Adam
    buffers = ("exp_avg", "exp_avg_sq")

    def _update(self, group, params, grads, states, has_complex):
        beta1, beta2 = group["betas"]
        adam(params, grads, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states], [],
             [s["step"] for s in states], amsgrad=group["amsgrad"], has_complex=has_complex, beta1=beta1,
             beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
             maximize=group["maximize"], foreach=group["foreach"], capturable=group["capturable"],
             differentiable=group["differentiable"], fused=group["fused"],
             decoupled_weight_decay=group["decoupled_weight_decay"])


class RMSprop(Optimizer):
    torch_class = torch.optim.RMSprop
    buffers = ("square_avg",)

    def _update(self, group, params, grads, states, has_complex):
        rmsprop(params, grads, [s["square_avg"] for s in states], [], [], [s["step"] for s in states],
                lr=group["lr"], alpha=group["alpha"], eps=group["eps"], weight_decay=group["weight_decay"],
                momentum=group["momentum"], centered=group["centered"], foreach=group["foreach"],
                maximize=group["maximize"], differentiable=group["differentiable"],
                capturable=group["capturable"], has_complex=has_complex)


class SGD(Optimizer):
    torch_class = torch.optim.SGD   # without momentum it keeps no state

    def _update(self, group, params, grads, states, has_complex):
        sgd(params, grads, [], weight_decay=group["weight_decay"], momentum=group["momentum"], lr=group["lr"],
            dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"],
            has_sparse_grad=any(g.is_sparse for g in grads), foreach=group["foreach"], fused=group["fused"])


OPTIMIZERS: dict[str, type[Optimizer]] = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop}
