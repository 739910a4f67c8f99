import java.util.HexFormat;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;

/** Where the Java producer's default partitioner puts each key: args PARTITIONS HEXKEY... */
public class KeyPartitions {
    public static void main(String[] args) {
        int partitions = Integer.parseInt(args[0]);
        for (int i = 1; i < args.length; i++) {
            byte[] key = HexFormat.of().parseHex(args[i].equals("-") ? "" : args[i]);
            System.out.println(BuiltInPartitioner.partitionForKey(key, partitions));
        }
    }
}
