// The Java consumer's reads of a log, from every start offset: the rules Spark's format("kafka")
// reads by, as the oracle of tests/integration/java_consumer.py. Run as a single-file program:
//   java -cp '<kafka jars>/*' ConsumerReads.java <bootstrap> <topic> <partitions> <isolation>...
// For each isolation level and each start offset s from 0 to the largest end offset, every
// partition is read from min(s, its end) to its end (endOffsets: the LSO under read_committed),
// and each record printed as "<isolation> <s> <partition> <offset> <value as UTF-8, or ->".
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ConsumerReads {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        for (int i = 3; i < args.length; i++) {
            read(bootstrap, topic, partitions, args[i], out);
        }
        out.flush();
    }

    static void read(String bootstrap, String topic, int partitions, String isolation, BufferedWriter out)
            throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", isolation);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "none");
        props.put("check.crcs", "true");
        // Each start seeks away from a fetch the broker may hold for want of data: hold it briefly.
        props.put("fetch.max.wait.ms", "10");
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(tps);
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(60));
            long last = 0;
            for (long end : ends.values()) {
                last = Math.max(last, end);
            }
            for (long start = 0; start <= last; start++) {
                Set<TopicPartition> open = new HashSet<>();
                for (TopicPartition tp : tps) {
                    consumer.seek(tp, Math.min(start, ends.get(tp)));
                    if (start < ends.get(tp)) {
                        open.add(tp);
                    }
                }
                long deadline = System.nanoTime() + 120_000_000_000L;
                while (!open.isEmpty()) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("no end of " + open + " from " + start);
                    }
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                        String value = r.value() == null ? "-" : new String(r.value(), StandardCharsets.UTF_8);
                        out.write(isolation + " " + start + " " + r.partition() + " " + r.offset() + " " + value + "\n");
                    }
                    open.removeIf(tp -> consumer.position(tp) >= ends.get(tp));
                }
            }
        }
    }
}
