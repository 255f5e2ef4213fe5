"""The distinct values of an integer array without ``np.unique``'s one-time cost.

``np.unique``'s first plain call in a process (no ``return_index``, ``return_inverse``
or ``return_counts``) imports ``numpy.ma`` to ask ``np.ma.is_masked``: ~9 ms of CPU,
which an import of a small store (~160 ms in all), a read of a persistent forecast or
an export with flat views paid for one such call.

Layer: imports numpy only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct_ints"]


def distinct_ints(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D integer array, ascending (``np.unique``'s answer).

    Not ``np.unique`` itself (see the module docstring); its answer for every 1-D
    integer array.
    """
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
