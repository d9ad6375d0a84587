"""Compact, exact byte encodings of aligned prediction arrays (stored with every submission).

Booleans are packed 8 to a byte (a 7,000-example NLVR2 submission is 873 bytes); small integers
(VCR choices 0-3) are stored one int8 each; other arrays in a fixed little-endian dtype (Winoground's
float64 scores, open answers as 64-bit hashes of their text). Shapes are not stored: the gold set
determines them. The *_many variants decode k blobs into one stacked array without a Python loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


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
    return pack_fixed(values, np.int8)


def unpack_int8(blob: bytes, shape: tuple[int, ...]) -> np.ndarray:
    return unpack_fixed(blob, shape, np.int8)


def unpack_int8_many(blobs: Sequence[bytes], shape: tuple[int, ...]) -> np.ndarray:
    return unpack_fixed_many(blobs, shape, np.int8)


def pack_fixed(values: np.ndarray, dtype: np.typing.DTypeLike) -> bytes:
    """Values in a fixed little-endian dtype (the stored bytes are the same on every machine)."""
    return np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()


def unpack_fixed(blob: bytes, shape: tuple[int, ...], dtype: np.typing.DTypeLike) -> np.ndarray:
    stored = np.dtype(dtype).newbyteorder("<")
    size = int(np.prod(shape)) * stored.itemsize
    if len(blob) != size:
        raise ValueError(f"stored predictions have {len(blob)} bytes; expected {size} for shape {shape}")
    return np.frombuffer(blob, dtype=stored).reshape(shape).astype(np.dtype(dtype), copy=True)


def unpack_fixed_many(blobs: Sequence[bytes], shape: tuple[int, ...], dtype: np.typing.DTypeLike) -> np.ndarray:
    stored = np.dtype(dtype).newbyteorder("<")
    _check_sizes(blobs, int(np.prod(shape)) * stored.itemsize)
    stacked = np.frombuffer(b"".join(blobs), dtype=stored).reshape((len(blobs),) + tuple(shape))
    return stacked.astype(np.dtype(dtype), copy=True)


def text_hashes(values: Sequence[str] | np.ndarray) -> np.ndarray:
    """A 64-bit hash of each string (uint64, the same in every process and release: pandas' SipHash with its
    fixed key): how open answers are stored and compared. Each is compared with a question's few gold answers,
    so a collision (one in 2**64 a comparison) is not a concern; repeated strings are hashed once."""
    array = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values.astype(object)
    if array.size == 0:
        return np.zeros(array.shape, dtype=np.uint64)
    hashed: np.ndarray = pd.util.hash_array(array.ravel(), categorize=True).reshape(array.shape)
    return hashed


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


# --- compact per-example results (TaskType.results_dtype) ---------------------------------------------------

_RESULTS_MAGIC = b"HR1"
_STAMP = 16  # bytes of the stamp: what the results were counted against (a gold file's digest)


def pack_results(results: np.ndarray, dtype: np.typing.DTypeLike, stamp: str) -> bytes:
    """One entry's per-example results, zlib-compressed (a VQA v2 question's points take a few bits of a byte),
    after a stamp naming what they were counted against: results stamped otherwise are not read (unpack_results)."""
    import zlib

    mark = stamp.encode("ascii")[:_STAMP].ljust(_STAMP, b" ")
    values = np.ascontiguousarray(results, dtype=np.dtype(dtype).newbyteorder("<"))
    return _RESULTS_MAGIC + mark + zlib.compress(values.tobytes(), 1)


def unpack_results(blob: bytes | None, n: int, dtype: np.typing.DTypeLike, stamp: str) -> np.ndarray | None:
    """The (n,) results pack_results stored, or None where there are none, they are stamped otherwise (counted
    against another gold file) or they do not have n values."""
    import zlib

    mark = stamp.encode("ascii")[:_STAMP].ljust(_STAMP, b" ")
    if blob is None or blob[: len(_RESULTS_MAGIC)] != _RESULTS_MAGIC or blob[3 : 3 + _STAMP] != mark:
        return None
    stored = np.dtype(dtype).newbyteorder("<")
    try:
        raw = zlib.decompress(blob[3 + _STAMP :], bufsize=n * stored.itemsize)
    except zlib.error:
        return None
    if len(raw) != n * stored.itemsize:
        return None
    return np.frombuffer(raw, dtype=stored).astype(np.dtype(dtype), copy=False)
