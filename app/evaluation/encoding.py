"""Compact, exact byte encodings of aligned prediction arrays (stored with every submission).

Booleans are packed 8 to a byte (a 7,000-example NLVR2 submission is 873 bytes); small integers
(VCR choices 0-3) are stored one int8 each; scores compared exactly (Winoground's four per example) as
little-endian float64, every bit kept. Shapes are not stored: the gold set determines them.
The *_many variants decode k blobs into one stacked array without a Python loop over the bits.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pack_bools(values: np.ndarray) -> bytes:
    return np.packbits(np.asarray(values, dtype=bool).ravel()).tobytes()


def _packed_size(shape: tuple[int, ...]) -> int:
    return (int(np.prod(shape)) + 7) // 8


def unpack_bools(blob: bytes, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape))
    if len(blob) != _packed_size(shape):
        raise ValueError(f"packed predictions have {len(blob)} bytes; expected {_packed_size(shape)} for shape {shape}")
    bits = np.unpackbits(np.frombuffer(blob, dtype=np.uint8), count=count)
    return bits.view(bool).reshape(shape)  # unpackbits gives 0/1 bytes: reinterpret, no copy


def unpack_bools_many(blobs: Sequence[bytes], shape: tuple[int, ...]) -> np.ndarray:
    size = _packed_size(shape)
    _check_sizes(blobs, size)
    packed = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), size)
    # Unpack whole bytes and cut the padding off: unpackbits(count=...) along an axis is ~15x slower.
    bits = np.unpackbits(packed, axis=1)[:, : int(np.prod(shape))]
    return bits.view(bool).reshape((len(blobs),) + tuple(shape))


def pack_int8(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype=np.int8).tobytes()


def unpack_int8(blob: bytes, shape: tuple[int, ...]) -> np.ndarray:
    if len(blob) != int(np.prod(shape)):
        raise ValueError(f"stored predictions have {len(blob)} bytes; expected {int(np.prod(shape))} for shape {shape}")
    return np.frombuffer(blob, dtype=np.int8).reshape(shape).copy()


def unpack_int8_many(blobs: Sequence[bytes], shape: tuple[int, ...]) -> np.ndarray:
    _check_sizes(blobs, int(np.prod(shape)))
    return np.frombuffer(b"".join(blobs), dtype=np.int8).reshape((len(blobs),) + tuple(shape)).copy()


def pack_float64(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype="<f8").tobytes()


def unpack_float64(blob: bytes, shape: tuple[int, ...]) -> np.ndarray:
    size = 8 * int(np.prod(shape))
    if len(blob) != size:
        raise ValueError(f"stored predictions have {len(blob)} bytes; expected {size} for shape {shape}")
    return np.frombuffer(blob, dtype="<f8").astype(np.float64).reshape(shape)


def unpack_float64_many(blobs: Sequence[bytes], shape: tuple[int, ...]) -> np.ndarray:
    _check_sizes(blobs, 8 * int(np.prod(shape)))
    return np.frombuffer(b"".join(blobs), dtype="<f8").astype(np.float64).reshape((len(blobs),) + tuple(shape))


def _check_sizes(blobs: Sequence[bytes], size: int) -> None:
    wrong = [i for i, blob in enumerate(blobs) if len(blob) != size]
    if wrong:
        raise ValueError(
            f"{len(wrong)} stored prediction blobs (first at position {wrong[0]}) do not have {size} bytes"
        )


def bit_differences(blob: bytes, blobs: Sequence[bytes]) -> np.ndarray:
    """How many packed booleans differ between `blob` and each of `blobs` (same length), without unpacking:
    XOR the bytes and count the set bits (the zero padding never differs). int64 (k,)."""
    _check_sizes(blobs, len(blob))
    packed = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), len(blob))
    counts: np.ndarray = np.bitwise_count(packed ^ np.frombuffer(blob, dtype=np.uint8)).sum(axis=1, dtype=np.int64)
    return counts
