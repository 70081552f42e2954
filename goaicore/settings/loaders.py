"""Variables read where they are used, not by ``Settings``: the schemas when they are
loaded, the Apache Kafka jars when a local Apache Kafka starts
(``goaicore.kafka.apache.jars``). A child process is given them as they are."""

from __future__ import annotations

from goaicore.settings.declare import Setting

LOADERS: tuple[Setting, ...] = (
    Setting(
        None,
        "GOAICORE_SCHEMAS_DIR",
        "the package's own",
        "Folder of the Avro schemas, to read with another copy than the one installed "
        "with the package.",
    ),
    Setting(
        None,
        "GOAICORE_KAFKA_CACHE",
        "`$XDG_CACHE_HOME/goaicore` (else `~/.cache/goaicore`)",
        "Where the local Apache Kafka's jars are kept, one folder per version, fetched once "
        "(and Apache Avro's jars and the OpenAI Agents SDK's sources, for the schema and "
        "session tests).",
    ),
    Setting(
        None,
        "GOAICORE_KAFKA_FETCH_TIMEOUT",
        "`600`",
        "Seconds the one-time Maven fetch of the Apache Kafka jars (or Apache Avro's) may "
        "take before it stops with an error.",
    ),
)
LOADER_VARIABLES = frozenset(setting.variable for setting in LOADERS)
