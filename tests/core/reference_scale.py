"""Reference truncation for the engine tests, independent of core.trace.ScaleGrad."""
import torch


class ReferenceScale(torch.autograd.Function):
    """Identity forward, gradient times ξ: the ξ-scaling of a carried state."""

    @staticmethod
    def forward(ctx, x, xi):
        ctx.xi = xi
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * ctx.xi, None
