// Publish one game event to a goaicore conversation from a Java service.
//
// What any producer does, here with Apache Kafka's client and Apache Avro: the record's
// key is the conversation id in UTF-8, the partition is murmur2 of the key (the Java
// client's default partitioner), and the value is a ConversationEvent in Avro's
// single-object encoding (C3 01, the schema's 8-byte CRC-64-AVRO fingerprint, the Avro
// binary body: BinaryMessageEncoder), written with a released schema file the service
// vendors. README, "Publishing from another language", states the contract.
//
//   java -cp <kafka-clients, avro and their dependencies> PublishGameEvent.java \
//       --bootstrap-servers localhost:9092 --topic goaicore.intake \
//       --conversation player-7 --kind check-in \
//       --text "Player checked in at Harrogate Theatre" --source game:harrogate \
//       --attr "venue=Harrogate Theatre" \
//       --schema schemas/released/ConversationEvent/v5.avsc
//
// Prints the event id and where the record landed, as one JSON line.
// The JVM decodes its arguments in the locale's charset: run it under a UTF-8 locale
// (LC_ALL=C.UTF-8) to pass a conversation id that is not ASCII.

import java.io.File;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class PublishGameEvent {

    public static void main(String[] args) {
        try {
            publish(args);
        } catch (Exception err) { // a bad argument, schema file or broker: one line
            fail(err.toString());
        }
    }

    private static void publish(String[] args) throws Exception {
        Map<String, String> options = new HashMap<>();
        Map<String, String> attributes = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (args[i].equals("--attr")) {
                String[] pair = args[i + 1].split("=", 2);
                if (pair.length != 2) {
                    fail("--attr takes KEY=VALUE");
                }
                attributes.put(pair[0], pair[1]);
            } else {
                options.put(args[i], args[i + 1]);
            }
        }
        for (String name : new String[] {
                "--bootstrap-servers", "--topic", "--conversation", "--kind", "--text", "--schema"}) {
            if (!options.containsKey(name)) {
                fail("missing " + name);
            }
        }
        String conversation = options.get("--conversation");

        // The vendored released schema: readers of this release or later read what it writes.
        Schema schema = new Schema.Parser().parse(new File(options.get("--schema")));
        Schema gameEventSchema = schema.getField("body").schema().getTypes().stream()
                .filter(branch -> branch.getFullName().equals("goaicore.GameEvent"))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no GameEvent in the schema"));

        GenericRecord body = new GenericData.Record(gameEventSchema);
        body.put("kind", options.get("--kind"));
        body.put("text", options.get("--text"));
        body.put("attributes", attributes);

        GenericRecord event = new GenericData.Record(schema);
        String eventId = UUID.randomUUID().toString().replace("-", ""); // a retry keeps it
        event.put("event_id", eventId);
        event.put("conversation_id", conversation);
        event.put("occurred_at", System.currentTimeMillis()); // timestamp-millis, UTC
        event.put("source", options.getOrDefault("--source", ""));
        event.put("causation_id", null);
        event.put("body", body);
        event.put("sealed", null);

        // C3 01 | fingerprint (little-endian) | body: Avro's single-object encoding.
        BinaryMessageEncoder<GenericRecord> encoder =
                new BinaryMessageEncoder<>(GenericData.get(), schema);
        ByteBuffer encoded = encoder.encode(event);
        byte[] value = new byte[encoded.remaining()];
        encoded.get(value);

        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, options.get("--bootstrap-servers"));
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class); // UTF-8
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        // No partitioner set: a keyed record goes to murmur2(key) & 0x7fffffff % partitions.
        String topic = options.get("--topic");
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(config)) {
            RecordMetadata landed =
                    producer.send(new ProducerRecord<>(topic, conversation, value)).get();
            System.out.printf(
                    "{\"event_id\": \"%s\", \"topic\": \"%s\", \"partition\": %d, \"offset\": %d}%n",
                    eventId, topic, landed.partition(), landed.offset());
        } catch (ExecutionException err) {
            fail(String.valueOf(err.getCause()));
        }
    }

    private static void fail(String message) {
        System.err.println("PublishGameEvent: " + message);
        System.exit(1);
    }
}
