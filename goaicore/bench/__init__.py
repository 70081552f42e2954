"""Benchmarks behind ``make bench`` / ``goaicore bench``.

Each suite is a function returning :class:`Measurement` rows. Suites register
themselves in :data:`SUITES` by name; the runner prints one table and writes
JSON, so numbers in issue notes and the README come from one place.
Benchmarks measure; they never assert a timing.
"""

from goaicore.bench.registry import SUITES, Measurement, suite

__all__ = ["SUITES", "Measurement", "suite"]
