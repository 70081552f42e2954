"""Publish one game event to a goaicore conversation from a service that is not goaicore.

What any producer does, here with confluent-kafka (librdkafka) and fastavro, and no
goaicore import: the record's key is the conversation id in UTF-8, the partition is
murmur2 of the key (librdkafka's ``murmur2_random``, not its CRC32 default), and the value
is a ``ConversationEvent`` in Avro's single-object encoding (``C3 01``, the schema's
8-byte CRC-64-AVRO fingerprint, the Avro binary body), written with a released schema
file the service vendors. README, "Publishing from another language", states the
contract.

    python publish_game_event.py --bootstrap-servers localhost:9092 \\
        --topic goaicore.intake --conversation player-7 --kind check-in \\
        --text "Player checked in at Harrogate Theatre" --source game:harrogate \\
        --attr venue="Harrogate Theatre"

Prints the event id and where the record landed, as one JSON line.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import fastavro
from confluent_kafka import KafkaException, Producer
from fastavro.schema import fingerprint, to_parsing_canonical_form

# The released schema a service copies into its own repository: released files never
# change, and every goaicore reader of this release or later reads what it writes.
SCHEMA = Path(__file__).resolve().parents[2] / "schemas/released/ConversationEvent/v5.avsc"
MAGIC = b"\xc3\x01"


def encoder(schema_path: Path) -> Any:
    """The writer of ``schema_path``'s events: single-object framing, then the body."""
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    # fastavro gives the fingerprint's bytes in the order the framing wants (little-endian).
    header = MAGIC + bytes.fromhex(fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO"))
    parsed = fastavro.parse_schema(schema)

    def encode(event: dict[str, Any]) -> bytes:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, parsed, event)
        return header + body.getvalue()

    return encode


def game_event(
    conversation: str, kind: str, text: str, source: str, attributes: dict[str, str]
) -> dict[str, Any]:
    """A ``ConversationEvent`` whose body is a ``GameEvent``, as fastavro writes a record."""
    return {
        "event_id": uuid.uuid4().hex,  # 32 lowercase hex digits; a retry keeps it
        "conversation_id": conversation,
        "occurred_at": int(time.time() * 1000),  # timestamp-millis, UTC
        "source": source,
        "causation_id": None,
        # The union's branch named by its full name (the namespace is goaicore).
        "body": ("goaicore.GameEvent", {"kind": kind, "text": text, "attributes": attributes}),
        "sealed": None,
    }


def publish(bootstrap: str, topic: str, conversation: str, value: bytes) -> tuple[int, int]:
    """Send one record keyed by ``conversation`` and wait for the broker: (partition, offset)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "partitioner": "murmur2_random",  # the Java client's default, and goaicore's
            "enable.idempotence": True,  # acks=all, no duplicates from retries
        }
    )
    landed: list[tuple[int, int]] = []
    failed: list[str] = []

    def delivered(err: Any, message: Any) -> None:
        if err is not None:
            failed.append(str(err))
        else:
            landed.append((message.partition(), message.offset()))

    producer.produce(topic, key=conversation.encode("utf-8"), value=value, on_delivery=delivered)
    if producer.flush(60) != 0:
        raise KafkaException(f"no answer from the broker about {topic} in 60 s")
    if failed:
        raise KafkaException(failed[0])
    return landed[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Publish one game event to a conversation.")
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True, help="<prefix>.intake or <prefix>.events")
    parser.add_argument("--conversation", required=True, help="the conversation id")
    parser.add_argument("--kind", required=True, help="e.g. check-in")
    parser.add_argument("--text", required=True, help="what the model is told")
    parser.add_argument("--source", default="", help="who publishes, e.g. game:harrogate")
    parser.add_argument(
        "--attr", action="append", default=[], metavar="KEY=VALUE", help="an attribute"
    )
    parser.add_argument("--schema", type=Path, default=SCHEMA, help="the vendored .avsc")
    args = parser.parse_args(argv)
    if any("=" not in pair for pair in args.attr):
        parser.error("--attr takes KEY=VALUE")
    attributes = dict(pair.split("=", 1) for pair in args.attr)
    event = game_event(args.conversation, args.kind, args.text, args.source, attributes)
    try:
        value = encoder(args.schema)(event)
        partition, offset = publish(args.bootstrap_servers, args.topic, args.conversation, value)
    except Exception as err:  # a bad schema file, event or broker: one line, no traceback
        print(f"publish_game_event: {err}", file=sys.stderr)
        return 1
    placed = {"partition": partition, "offset": offset}
    print(json.dumps({"event_id": event["event_id"], "topic": args.topic, **placed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
