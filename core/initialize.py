"""A dense net's initialisation (core.models.RecurrentNet): config.init per gate block, forget_bias, spectral_radius."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from gradflow.core.config import Config
    from gradflow.core.models import RecurrentNet

@torch.no_grad()
def initialize(model: RecurrentNet, config: Config):
    """Apply config.init, forget_bias and spectral_radius to freshly built weights."""
    H, G = model.hidden_size, model.chunks
    if config.init != "default":
        for row in range(model.num_rows):
            w_ih, w_hh, b_ih, b_hh = model.row_weights(row)
            b_ih.zero_()
            b_hh.zero_()
            for k in range(G):  # per gate block, so each block is square/orthogonal on its own
                block_ih, block_hh = w_ih[k * H:(k + 1) * H], w_hh[k * H:(k + 1) * H]
                if config.init == "normal":  # d2l: randn * 0.01
                    block_ih.normal_(0, 0.01)
                    block_hh.normal_(0, 0.01)
                elif config.init == "xavier":
                    nn.init.xavier_uniform_(block_ih)
                    nn.init.xavier_uniform_(block_hh)
                elif config.init == "orthogonal":
                    nn.init.xavier_uniform_(block_ih)
                    nn.init.orthogonal_(block_hh)
                elif config.init == "identity":  # IRNN (Le et al. 2015) — W_hh = I, small inputs
                    block_ih.normal_(0, 0.001)
                    block_hh.copy_(torch.eye(H))
                else:  # gaussian: the mean-field setting (core.meanfield), its W_ih input variance per one-hot x_t
                    block_ih.normal_(0, config.input_sigma)
                    block_hh.normal_(0, config.sigma_w / math.sqrt(H))
                    b_hh.normal_(0, config.sigma_b)
        if config.init == "normal":
            model.head.weight.normal_(0, 0.01)
            model.head.bias.zero_()
    if config.forget_bias is not None:
        for row in range(model.num_rows):
            _, _, b_ih, b_hh = model.row_weights(row)
            b_ih[H:2 * H] = config.forget_bias  # forget chunk; total bias b_if + b_hf = forget_bias
            b_hh[H:2 * H] = 0.0
    if config.spectral_radius is not None:
        model.rescale_recurrent(config.spectral_radius)
