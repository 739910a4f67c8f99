package bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.connector.kafka.dynamic.metadata.ClusterMetadata;
import org.apache.flink.connector.kafka.dynamic.metadata.KafkaMetadataService;
import org.apache.flink.connector.kafka.dynamic.metadata.KafkaStream;
import org.apache.flink.connector.kafka.dynamic.source.DynamicKafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Reads one stream with Flink's DynamicKafkaSource (bounded at the latest offsets) into a sink that
 * discards records, on a local mini-cluster with parallelism 2, once per request.
 *
 * <p>Requests come on stdin, one a line: {@code <expected records> <topic> <cluster>=<bootstrap>...}.
 * For each, one job runs and one line is printed on stdout:
 * {@code RESULT <records> <window start epoch ms> <window end epoch ms>}: the window runs from the
 * moment the first sink writer opens (tasks deployed, before any fetch) to the moment the last
 * expected record reached a sink, so mini-cluster start-up is not in it.
 *
 * <p>A request {@code LATENCY <warm-up ms> <measured ms> <topic> <cluster>=<bootstrap>...} runs an
 * unbounded job from the latest offsets instead; its sink notes, for each record it sees during the
 * measured window (after the warm-up), the time since the record's Kafka timestamp (CreateTime, set
 * by the producer). The job is cancelled after the window and one line is printed:
 * {@code RESULT <records> <p50 ms> <p99 ms>}.
 */
public final class DynamicKafkaBench {
  static final AtomicLong COUNT = new AtomicLong();
  static final AtomicLong FIRST_OPEN = new AtomicLong();
  static final AtomicLong DONE_AT = new AtomicLong();
  static volatile long expected;
  static volatile long windowStart;
  static volatile long windowEnd;
  static final List<Long> LATENCIES = Collections.synchronizedList(new ArrayList<>());

  /** The Kafka record as Spark's Kafka source exposes it: key, value, topic, partition, offset, timestamp. */
  public static final class Rec {
    public byte[] key;
    public byte[] value;
    public String topic;
    public int partition;
    public long offset;
    public long timestamp;
  }

  /** One stream over fixed clusters and one topic: the static metadata a file would hold. */
  static final class StaticMetadata implements KafkaMetadataService {
    private final KafkaStream stream;

    StaticMetadata(String streamId, String topic, Map<String, String> bootstraps) {
      Map<String, ClusterMetadata> clusters = new HashMap<>();
      for (Map.Entry<String, String> e : bootstraps.entrySet()) {
        Properties props = new Properties();
        props.setProperty("bootstrap.servers", e.getValue());
        clusters.put(e.getKey(), new ClusterMetadata(Set.of(topic), props));
      }
      this.stream = new KafkaStream(streamId, clusters);
    }

    @Override
    public Set<KafkaStream> getAllStreams() {
      return Set.of(stream);
    }

    @Override
    public Map<String, KafkaStream> describeStreams(Collection<String> ids) {
      Map<String, KafkaStream> found = new HashMap<>();
      if (ids.contains(stream.getStreamId())) {
        found.put(stream.getStreamId(), stream);
      }
      return found;
    }

    @Override
    public boolean isClusterActive(String cluster) {
      return stream.getClusterMetadataMap().containsKey(cluster);
    }

    @Override
    public void close() {}
  }

  static final class RecordSchema implements KafkaRecordDeserializationSchema<Rec> {
    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> r, Collector<Rec> out) {
      Rec rec = new Rec();
      rec.key = r.key();
      rec.value = r.value();
      rec.topic = r.topic();
      rec.partition = r.partition();
      rec.offset = r.offset();
      rec.timestamp = r.timestamp();
      out.collect(rec);
    }

    @Override
    public TypeInformation<Rec> getProducedType() {
      return TypeInformation.of(Rec.class);
    }
  }

  /** Counts and drops every record; notes when the first writer opened and the last record came. */
  static final class CountingSink implements Sink<Rec> {
    @Override
    public SinkWriter<Rec> createWriter(WriterInitContext context) {
      FIRST_OPEN.compareAndSet(0, System.currentTimeMillis());
      return new SinkWriter<Rec>() {
        private long touched;

        @Override
        public void write(Rec rec, Context ctx) {
          touched += rec.value.length + rec.offset;
          if (COUNT.incrementAndGet() == expected) {
            DONE_AT.set(System.currentTimeMillis());
          }
        }

        @Override
        public void flush(boolean endOfInput) {}

        @Override
        public void close() {
          if (touched == 42) {
            System.err.println("unlikely");
          }
        }
      };
    }
  }

  /** Notes each record's latency (now minus its Kafka timestamp) during the measured window. */
  static final class LatencySink implements Sink<Rec> {
    @Override
    public SinkWriter<Rec> createWriter(WriterInitContext context) {
      return new SinkWriter<Rec>() {
        @Override
        public void write(Rec rec, Context ctx) {
          long now = System.currentTimeMillis();
          if (now >= windowStart && now <= windowEnd) {
            LATENCIES.add(now - rec.timestamp);
          }
        }

        @Override
        public void flush(boolean endOfInput) {}

        @Override
        public void close() {}
      };
    }
  }

  /**
   * A local environment of parallelism 2 reading the stream from {@code start} (to {@code end}
   * when it is not null: a bounded job) into {@code sink}.
   */
  static StreamExecutionEnvironment job(
      String topic,
      Map<String, String> bootstraps,
      OffsetsInitializer start,
      OffsetsInitializer end,
      Sink<Rec> sink) {
    var builder =
        DynamicKafkaSource.<Rec>builder()
            .setStreamIds(Set.of("bench"))
            .setKafkaMetadataService(new StaticMetadata("bench", topic, bootstraps))
            .setDeserializer(new RecordSchema())
            .setStartingOffsets(start)
            .setGroupId(end == null ? "bench-flink-latency" : "bench-flink");
    if (end != null) {
      builder.setBounded(end);
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(2);
    env.fromSource(builder.build(), WatermarkStrategy.noWatermarks(), "dynamic-kafka")
        .sinkTo(sink)
        .name("sink");
    return env;
  }

  static void runLatency(long warmupMs, long measuredMs, String topic, Map<String, String> bootstraps)
      throws Exception {
    LATENCIES.clear();
    windowStart = Long.MAX_VALUE;
    windowEnd = Long.MAX_VALUE;
    StreamExecutionEnvironment env =
        job(topic, bootstraps, OffsetsInitializer.latest(), null, new LatencySink());
    JobClient job = env.executeAsync("dynamic-kafka-latency");
    long start = System.currentTimeMillis() + warmupMs;
    windowStart = start;
    windowEnd = start + measuredMs;
    Thread.sleep(warmupMs + measuredMs);
    job.cancel().get();
    List<Long> seen;
    synchronized (LATENCIES) {
      seen = new ArrayList<>(LATENCIES);
    }
    Collections.sort(seen);
    long p50 = seen.isEmpty() ? -1 : seen.get((int) Math.floor(0.50 * (seen.size() - 1)));
    long p99 = seen.isEmpty() ? -1 : seen.get((int) Math.floor(0.99 * (seen.size() - 1)));
    System.out.println("RESULT " + seen.size() + " " + p50 + " " + p99);
    System.out.flush();
  }

  static void runOnce(long want, String topic, Map<String, String> bootstraps) throws Exception {
    COUNT.set(0);
    FIRST_OPEN.set(0);
    DONE_AT.set(0);
    expected = want;
    StreamExecutionEnvironment env =
        job(topic, bootstraps, OffsetsInitializer.earliest(), OffsetsInitializer.latest(),
            new CountingSink());
    env.execute("dynamic-kafka-bench");
    System.out.println(
        "RESULT " + COUNT.get() + " " + FIRST_OPEN.get() + " " + DONE_AT.get());
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    System.out.println("READY");
    System.out.flush();
    String line;
    while ((line = in.readLine()) != null) {
      String[] parts = line.trim().split("\\s+");
      boolean latency = parts.length > 0 && parts[0].equals("LATENCY");
      int first = latency ? 4 : 2;
      if (parts.length <= first) {
        continue;
      }
      Map<String, String> bootstraps = new HashMap<>();
      for (int i = first; i < parts.length; i++) {
        String[] kv = parts[i].split("=", 2);
        bootstraps.put(kv[0], kv[1]);
      }
      if (latency) {
        runLatency(Long.parseLong(parts[1]), Long.parseLong(parts[2]), parts[3], bootstraps);
      } else {
        runOnce(Long.parseLong(parts[0]), parts[1], bootstraps);
      }
    }
  }
}
