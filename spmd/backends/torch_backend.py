"""PyTorch tensors: CPU devices share this process's memory with NumPy; CUDA devices (one per
GPU) copy across the bus."""

from __future__ import annotations

import warnings
from typing import Any

import array_api_compat.torch as torch_xp
import numpy as np
import torch

from spmd.backends.base import Backend


class TorchBackend(Backend):
    name = "torch"
    xp = torch_xp

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.platform = "cpu" if device_type == "cpu" else "gpu"

    def device_count(self) -> int:
        return torch.cuda.device_count() if self.device_type == "cuda" else 0

    def from_numpy(self, array: np.ndarray, index: int) -> torch.Tensor:
        with warnings.catch_warnings():  # read-only arrays: nobody writes to either after
            warnings.simplefilter("ignore", UserWarning)
            plain = array.flags.c_contiguous and min(array.strides, default=0) >= 0
            tensor = torch.from_numpy(array if plain else array.copy())
        if self.device_type == "cpu":
            return tensor
        return tensor.to(f"cuda:{index}")

    def to_numpy(self, buffer: Any) -> np.ndarray:
        if buffer.device.type != "cpu":
            buffer = buffer.cpu()
        return buffer.resolve_conj().numpy()

    def is_buffer(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor)


BACKEND = TorchBackend("cpu")
GPU_BACKEND = TorchBackend("cuda")
