"""What a value and an instant are: the lowest layer, shared by every other.

* :mod:`.periods` — ISO-8601 durations, their canonical spelling, calendar grids;
* :mod:`.timeref` — time references (UTC, fixed offsets, zones, naive), instants as
  integer milliseconds and their text forms;
* :mod:`.elements` — element types (the dtype of one value, scalar or struct), their
  encoding and decoding;
* :mod:`.hashing` — the content hashes (data, timestamps, features) the store and the
  interchange files carry;
* :mod:`.slicing` — cutting a series' arrays to a time range or window, and checking a
  query bound against its time reference (the series classes use it, so it sits below
  them; it takes any series object).

Layer: imports ``errors`` (``tests/test_layers.py`` checks it).
"""
