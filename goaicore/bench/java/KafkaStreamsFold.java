// The peers suite's Kafka Streams app: goaicore's events folded per conversation into a
// ConversationSnapshot, with groupByKey().aggregate(), at-least-once, 100 ms commits.
//
// Run as a single source file on the jars goaicore.bench.kafka_streams fetches:
//   java -cp JARS KafkaStreamsFold.java BOOTSTRAP EVENTS SNAPSHOTS APPLICATION_ID STATE_DIR SCHEMAS
//
// Each event value is Avro's single-object encoding (C3 01, the schema's fingerprint, the
// body) with schemas/ConversationEvent.avsc; the aggregate is a ConversationSnapshot
// record of schemas/ConversationSnapshot.avsc, encoded the same way in the state store
// and on the output topic. Its work per event, and nothing more: decode the event, append
// the message a UserMessage, AssistantTurn, ToolResult or GameEvent adds (role, text, the
// game event's kind as its name, the event id), count the event (and the message), and
// set last_position to the event's partition and offset. No validation, duplicate
// detection, bounds or anomalies: goaicore's fold does those. An undecodable value is
// skipped.

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueStore;

public class KafkaStreamsFold {

    /** A decoded event and where it was read: what the aggregator folds. */
    record Read(GenericRecord event, int partition, long offset) {}

    /** Single-object Avro bytes of a snapshot, in the state store and on the output topic. */
    static Serde<GenericRecord> snapshotSerde(Schema schema) {
        BinaryMessageEncoder<GenericRecord> encoder =
                new BinaryMessageEncoder<>(GenericData.get(), schema);
        BinaryMessageDecoder<GenericRecord> decoder =
                new BinaryMessageDecoder<>(GenericData.get(), schema);
        Serializer<GenericRecord> serializer = (topic, snapshot) -> {
            if (snapshot == null) {
                return null;
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try {
                encoder.encode(snapshot, out);
            } catch (IOException err) {
                throw new UncheckedIOException(err);
            }
            return out.toByteArray();
        };
        Deserializer<GenericRecord> deserializer = (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                return decoder.decode(data);
            } catch (IOException err) {
                throw new UncheckedIOException(err);
            }
        };
        return Serdes.serdeFrom(serializer, deserializer);
    }

    /** Decodes each value, keeping its partition and offset; null for one it cannot. */
    static final class Decode implements FixedKeyProcessor<String, byte[], Read> {
        private final BinaryMessageDecoder<GenericRecord> decoder;
        private FixedKeyProcessorContext<String, Read> context;

        Decode(Schema schema) {
            this.decoder = new BinaryMessageDecoder<>(GenericData.get(), schema);
        }

        @Override
        public void init(FixedKeyProcessorContext<String, Read> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<String, byte[]> record) {
            Read read = null;
            try {
                var meta = context.recordMetadata().orElseThrow();
                read = new Read(decoder.decode(record.value()), meta.partition(), meta.offset());
            } catch (Exception err) {
                System.err.println("skipped an undecodable event: " + err.getMessage());
            }
            context.forward(record.withValue(read));
        }
    }

    static Schema parse(Path path) throws IOException {
        return new Schema.Parser().parse(path.toFile());
    }

    static Schema nonNull(Schema union) {
        return union.getTypes().stream()
                .filter(s -> s.getType() != Schema.Type.NULL)
                .findFirst()
                .orElseThrow();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println(
                    "usage: KafkaStreamsFold BOOTSTRAP EVENTS SNAPSHOTS APPLICATION_ID STATE_DIR SCHEMAS");
            System.exit(2);
        }
        String bootstrap = args[0];
        String events = args[1];
        String snapshots = args[2];
        Path schemas = Path.of(args[5]);
        Schema eventSchema = parse(schemas.resolve("ConversationEvent.avsc"));
        Schema snapshotSchema = parse(schemas.resolve("ConversationSnapshot.avsc"));
        Schema messageSchema = snapshotSchema.getField("messages").schema().getElementType();
        Schema positionSchema = nonNull(snapshotSchema.getField("last_position").schema());
        GenericData.Record emptyMessage = new GenericRecordBuilder(messageSchema)
                .set("role", "")
                .build();
        Serde<GenericRecord> serde = snapshotSerde(snapshotSchema);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(events, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                .processValues(() -> new Decode(eventSchema))
                .groupByKey()
                .aggregate(
                        () -> new GenericRecordBuilder(snapshotSchema)
                                .set("conversation_id", "")
                                .build(),
                        (key, read, snapshot) -> {
                            snapshot.put("conversation_id", key);
                            GenericRecord event = read.event();
                            GenericRecord body = (GenericRecord) event.get("body");
                            String role = null;
                            Object text = null;
                            Object name = null;
                            switch (body.getSchema().getName()) {
                                case "UserMessage" -> { role = "user"; text = body.get("text"); }
                                case "AssistantTurn" -> { role = "assistant"; text = body.get("text"); }
                                case "ToolResult" -> { role = "tool"; text = body.get("content"); }
                                case "GameEvent" -> {
                                    role = "system";
                                    text = body.get("text");
                                    name = body.get("kind");
                                }
                                default -> { }
                            }
                            if (role != null) {
                                GenericData.Record message = new GenericData.Record(emptyMessage, true);
                                message.put("role", role);
                                message.put("text", text);
                                message.put("name", name);
                                message.put("event_id", event.get("event_id"));
                                @SuppressWarnings("unchecked")
                                var messages = (java.util.List<Object>) snapshot.get("messages");
                                messages.add(message);
                                snapshot.put("message_count", (Long) snapshot.get("message_count") + 1);
                            }
                            snapshot.put("event_count", (Long) snapshot.get("event_count") + 1);
                            GenericData.Record position = new GenericData.Record(positionSchema);
                            position.put("partition", read.partition());
                            position.put("offset", read.offset());
                            snapshot.put("last_position", position);
                            return snapshot;
                        },
                        Materialized.<String, GenericRecord, KeyValueStore<Bytes, byte[]>>as("snapshots")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(serde))
                .toStream()
                .to(snapshots, Produced.with(Serdes.String(), serde));

        Properties props = new Properties();
        props.putAll(Map.of(
                StreamsConfig.APPLICATION_ID_CONFIG, args[3],
                StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                StreamsConfig.STATE_DIR_CONFIG, args[4],
                StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE,
                StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100",
                StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1",
                "auto.offset.reset", "earliest"));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setUncaughtExceptionHandler(err -> {
            System.err.println("Kafka Streams failed: " + err);
            stopped.countDown();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                    .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(10));
            stopped.countDown();
        }));
        streams.start();
        stopped.await();
    }
}
