"""The torch dtype each `config.precision` computes in (the trainer builds in it; a user's cell is checked in it)."""
import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64}
