"""Benchmarks behind ``make bench`` / ``goaicore bench``.

Each suite is a function returning :class:`Measurement` rows. Suites register
themselves in :data:`SUITES` by name, or in :data:`BROKER_SUITES` when they
measure through Kafka: those run on Apache Kafka and on the embedded broker, each
row naming its broker. The runner prints one table and writes JSON, so numbers
in issue notes and the README come from one place. Benchmarks measure; they
never assert a timing.
"""

from goaicore.bench.registry import BROKER_SUITES, SUITES, Measurement, broker_suite, suite

__all__ = ["BROKER_SUITES", "SUITES", "Measurement", "broker_suite", "suite"]
