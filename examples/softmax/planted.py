"""A wrong softmax on purpose: no running maximum, and the last column of each row never written."""

import torch


def softmax(x: torch.Tensor, y: torch.Tensor, rows: int, cols: int, precision: str = "fp32") -> None:
    e = torch.exp(x[:, : cols - 1])  # fp16: fine for |x| < 1, but the dropped column stays poisoned (NaN)
    y[:, : cols - 1] = e / e.sum(dim=1, keepdim=True)
