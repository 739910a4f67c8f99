import java.util.Comparator;
import java.util.Optional;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.replica.ClientMetadata;
import org.apache.kafka.common.replica.PartitionView;
import org.apache.kafka.common.replica.ReplicaSelector;
import org.apache.kafka.common.replica.ReplicaView;

/**
 * A broker's replica selector (KIP-392, {@code replica.selector.class}) that names a follower as
 * every consumer's preferred read replica, whatever its rack id (none too): the follower with
 * the lowest broker id among those the leader offers (in sync, holding the fetch offset), or
 * none (the leader serves the fetch) when it offers none. Kafka's own selectors name a follower
 * only to a client that sends a rack id; this one lets a test see the answer a client that
 * sends none gets from a broker whose selector does not look at racks.
 */
public class FollowerSelector implements ReplicaSelector {
    @Override
    public Optional<ReplicaView> select(
            TopicPartition partition, ClientMetadata client, PartitionView view) {
        int leader = view.leader().endpoint().id();
        return view.replicas().stream()
                .filter(replica -> replica.endpoint().id() != leader)
                .min(Comparator.comparingInt(replica -> replica.endpoint().id()));
    }
}
