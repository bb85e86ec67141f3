"""Compact, exact-sum storage for attention probabilities.

Attention for a 256-token prompt plus 256 generated tokens is ~35 million values (30 layers x 9
heads). As float16 that is 71 MB, and zlib shrinks float16 attention only ~1.2x (the mantissa bits
are noise), far over a trace size that a browser can fetch. So rows are stored as 12-bit fixed
point of their running sum: q_i = round(4095 * cumsum_i) - round(4095 * cumsum_{i-1}).
  - every value keeps an absolute error below 1/4095 (2.4e-4), invisible on a heatmap;
  - a row's total is kept to within 1/8190, so a broken capture (rows not summing to 1) still shows;
  - the small integers compress ~4x with zlib after splitting low and high bytes.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from .errors import TraceFormatError

SCALE = 4095
MAX_VALUES = 64_000_000  # refuse to inflate anything bigger (a hostile trace could claim any shape)


@dataclass
class PackedRows:
    shape: list[int]   # [..., keys]; the last axis holds one probability row
    data: bytes        # zlib(low bytes | high bytes) of the uint16 increments

    @classmethod
    def pack(cls, rows: np.ndarray) -> PackedRows:
        rows = np.asarray(rows, dtype=np.float64)
        fixed = np.rint(np.cumsum(rows, axis=-1) * SCALE)
        q = np.diff(fixed, axis=-1, prepend=0).clip(0, 65535).astype("<u2")
        planes = q.view(np.uint8).reshape(-1, 2).T.tobytes()  # all low bytes, then all high bytes
        return cls(shape=list(rows.shape), data=zlib.compress(planes, 6))

    def unpack(self) -> np.ndarray:
        """The rows as float32, shape `self.shape`."""
        count = math.prod(self.shape) if self.shape else 0     # Python ints: np.prod overflows to 0
        if any(d < 0 for d in self.shape) or count > MAX_VALUES:
            raise TraceFormatError(f"attention block shape {self.shape} is not acceptable")
        try:
            planes = zlib.decompressobj().decompress(self.data, 2 * count + 1)
        except zlib.error as exc:
            raise TraceFormatError(f"attention block is corrupt: {exc}") from None
        if len(planes) != 2 * count:
            raise TraceFormatError("attention block does not match its shape")
        q = np.frombuffer(planes, np.uint8).reshape(2, count).T.copy().view("<u2").reshape(self.shape)
        return q.astype(np.float32) / SCALE

    @property
    def nbytes(self) -> int:
        return len(self.data)
