"""A gunicorn worker's memory given back: glibc's allocator set for a long-lived process that handles
large uploads now and then (gunicorn.conf.py calls ``configure`` after each fork and ``after_request``
after each request).

What an upload costs is freed when its request ends (app/evaluation/predictions.py copies nothing of it;
app/services/intake/submissions.py keeps no reference cycle to it), but freed is not given back: by default
glibc raises its mmap threshold each time a large block is freed (up to 32 MB), so the next blocks of a
few MB come from the heap, and a heap keeps its free memory wherever a live block sits above it. Each
thread may also get an arena of its own. So:

- the mmap threshold is fixed at 1 MB: every block that large is its own mapping, unmapped when freed;
- at most 2 arenas: the worker's thread and the threads that write originals (upload_files) share them;
- after a request with a body over 1 MB, ``malloc_trim(0)`` hands back the free pages left in the heaps.

Only on glibc (Linux); elsewhere each function does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

MMAP_THRESHOLD = 1 << 20  # bytes: a block this large or larger is mapped on its own and unmapped when freed
TRIM_THRESHOLD = 4 << 20  # bytes free at a heap's top before glibc gives them back by itself
ARENA_MAX = 2
TRIM_AFTER_BODY = 1 << 20  # bytes of request body after which a request ends with malloc_trim

_libc: ctypes.CDLL | None = None


def glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc, else None."""
    global _libc
    if _libc is None and platform.libc_ver()[0] == "glibc":
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def configure() -> bool:
    """Set the allocator of this process (a worker, just forked); False where it is not glibc's or refused.
    MALLOC_ARENA_MAX and its kin in the environment would be read only at a process's start, and workers
    are forked from a master that has started long before: so mallopt, in the worker."""
    libc = glibc()
    if libc is None:
        return False
    settings = ((M_ARENA_MAX, ARENA_MAX), (M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return all(libc.mallopt(parameter, value) == 1 for parameter, value in settings)


def trim() -> None:
    """Give the free pages of every heap back to the system."""
    libc = glibc()
    if libc is not None:
        libc.malloc_trim(0)


def after_request(environ: dict) -> None:
    """After a request whose body was large (an upload) or of unknown length (chunked): trim, about half a
    millisecond. Other requests leave the heaps as they are."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > TRIM_AFTER_BODY or "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        trim()
