"""What a value and an instant are: the lowest layer, shared by every other.

* :mod:`.periods` — ISO-8601 durations, their canonical spelling, calendar grids;
* :mod:`.timeref` — time references (UTC, fixed offsets, zones, naive), instants as
  integer milliseconds and their text forms;
* :mod:`.elements` — element types (the dtype of one value, scalar or struct), their
  encoding and decoding;
* :mod:`.distinct` — the distinct values of an integer array (``np.unique`` without its
  one-time import of ``numpy.ma``);
* :mod:`.hashing` — the content hashes (data, timestamps, features) the store and the
  interchange files carry.

Layer: imports ``errors`` (``tests/test_layers.py`` checks it).
"""
