"""Give a big page's freed memory back to the system (glibc's ``malloc_trim``), where it can be.

A page's lxml tree is millions of small C allocations; freed, they stay in the
process's heap and count in its RSS until the heap's top is free, which after a
1.5 MB index page in a long-lived page worker it rarely is. ``malloc_trim(0)``
returns every free page of the heap to the system (``madvise``), a few
milliseconds; it runs after pages above :data:`TRIM_ABOVE` bytes only. Elsewhere
than glibc it is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

#: A body this large builds a tree of tens of MB; smaller pages reuse the heap they find.
TRIM_ABOVE = 256 * 1024


@cache
def _malloc_trim() -> object | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


def release_after(size: int) -> bool:
    """After work on ``size`` bytes, hand the heap's free pages back when it was big; True when trimmed."""
    trim = _malloc_trim() if size > TRIM_ABOVE else None
    if trim is None:
        return False
    trim(0)  # type: ignore[operator]
    return True
