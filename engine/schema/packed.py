"""Compact, exact-sum storage for attention probabilities.

Attention for a 256-token prompt plus 256 generated tokens is ~35 million values (30 layers x 9
heads). As float16 that is 71 MB, and zlib shrinks float16 attention only ~1.2x (the mantissa bits
are noise), far over a trace size that a browser can fetch. So rows are stored as 12-bit fixed
point of their running sum: q_i = round(4095 * cumsum_i) - round(4095 * cumsum_{i-1}).
  - every value keeps an absolute error below 1/4095 (2.4e-4), invisible on a heatmap;
  - a row's total is kept to within 1/8190, so a broken capture (rows not summing to 1) still shows;
  - the small integers compress ~4x after splitting low and high bytes: with zstd at level 1
    (trace@2; ~10x faster than zlib at level 6, and a little smaller), or zlib in trace@1 files,
    which still read.
"""

from __future__ import annotations

import math
import zlib

import zstandard
from dataclasses import dataclass

import numpy as np

from engine.errors import TraceFormatError

SCALE = 4095
MAX_VALUES = 64_000_000  # refuse to inflate anything bigger (a hostile trace could claim any shape)


@dataclass
class PackedRows:
    shape: list[int]   # [..., keys]; the last axis holds one probability row
    data: bytes        # compressed (low bytes | high bytes) of the uint16 increments
    codec: str = "zlib"  # "zstd" (written since trace@2) or "zlib" (trace@1)

    @classmethod
    def pack(cls, rows: np.ndarray) -> PackedRows:
        rows = np.asarray(rows, dtype=np.float64)
        fixed = np.rint(np.cumsum(rows, axis=-1) * SCALE)
        q = np.diff(fixed, axis=-1, prepend=0).clip(0, 65535).astype("<u2")
        planes = q.view(np.uint8).reshape(-1, 2).T.tobytes()  # all low bytes, then all high bytes
        # the frame records its content size, so a reader can check a block's claim before inflating it
        data = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(planes)
        # compress() hands back a buffer sized for the worst case; keep an exact copy instead
        return cls(shape=list(rows.shape), data=bytes(memoryview(data)), codec="zstd")

    def stored_size(self) -> int | None:
        """The uncompressed size the data itself declares (zstd frame header); None for zlib."""
        if self.codec != "zstd":
            return None
        try:
            size = zstandard.frame_content_size(self.data)
        except zstandard.ZstdError:
            return -1
        return size if size >= 0 else -1

    def unpack(self) -> np.ndarray:
        """The rows as float32, shape `self.shape`."""
        count = math.prod(self.shape) if self.shape else 0     # Python ints: np.prod overflows to 0
        if any(d < 0 for d in self.shape) or count > MAX_VALUES:
            raise TraceFormatError(f"attention block shape {self.shape} is not acceptable")
        try:
            if self.codec == "zstd":
                if self.stored_size() != 2 * count:
                    raise TraceFormatError("attention block does not match its shape")
                planes = zstandard.ZstdDecompressor().decompress(self.data, max_output_size=2 * count)
            elif self.codec == "zlib":
                planes = zlib.decompressobj().decompress(self.data, 2 * count + 1)
            else:
                raise TraceFormatError(f"attention block codec {self.codec[:20]!r} is not zstd or zlib")
        except (zlib.error, zstandard.ZstdError) as exc:
            raise TraceFormatError(f"attention block is corrupt: {exc}") from None
        if len(planes) != 2 * count:
            raise TraceFormatError("attention block does not match its shape")
        q = np.frombuffer(planes, np.uint8).reshape(2, count).T.copy().view("<u2").reshape(self.shape)
        return q.astype(np.float32) / SCALE

    @property
    def nbytes(self) -> int:
        return len(self.data)


@dataclass
class Hidden:
    """Every layer's state at a step's newest position but the last layer's: the logit lens's input,
    projected off the run's clock (engine/model/lens.py). Stored raw: float32 noise does not compress,
    and the lens must see the exact values. An exported trace carries the lens instead."""
    shape: list[int]            # [layers - 1, hidden_size]
    data: bytes                 # little-endian float32, row-major
