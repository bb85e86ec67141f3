"""An opt-in weight format for the lab: int8 weight-only with bfloat16 activations.

Every linear layer of the decoder keeps its weight as int8, one scale per output row (symmetric:
scale = max |w| / 127), and multiplies with PyTorch's own kernel `aten._weight_int8pack_mm`, the
one Inductor lowers a compiled int8 weight-only matmul to (gpt-fast's int8 mode). That kernel is
fast only with bf16 activations (with fp32 ones it was ~9x slower than fp32 here), so the model
runs in bf16 around it. The embeddings and the LM head (tied to them) stay bf16.

It reads a quarter of fp32's weight bytes per token, and it is another model: the lab reports its
top-1 agreement and KL against fp32 beside its speed. Never the default anywhere.
"""

from __future__ import annotations

import torch
from torch import nn

from engine.model.hooks import decoder_layers

NAME = "bf16-int8"


class Int8WeightOnlyLinear(nn.Module):
    def __init__(self, linear: nn.Linear):
        super().__init__()
        w = linear.weight.detach().float()
        scales = w.abs().amax(dim=1).clamp_min(1e-8) / 127.0
        self.weight = nn.Parameter(torch.round(w / scales[:, None]).clamp(-127, 127).to(torch.int8),
                                   requires_grad=False)                    # [out, in]
        self.scales = nn.Parameter(scales.to(torch.bfloat16), requires_grad=False)   # [out]
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().to(torch.bfloat16),
                                                                  requires_grad=False)
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        y = torch.ops.aten._weight_int8pack_mm(x.reshape(-1, shape[-1]).to(torch.bfloat16), self.weight, self.scales)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*shape[:-1], self.out_features)


def quantize(model: nn.Module) -> nn.Module:
    """Swap the decoder layers' nn.Linear modules in place (the model is bf16 already)."""
    for block in decoder_layers(model):
        for name, module in list(block.named_modules()):
            if isinstance(module, nn.Linear):
                parent = block.get_submodule(name.rpartition(".")[0]) if "." in name else block
                setattr(parent, name.rpartition(".")[2], Int8WeightOnlyLinear(module))
    return model
