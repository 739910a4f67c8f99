//! Where a row without a partition goes, as the Java producer's default partitioner puts it
//! (Spark's `format("kafka")` sink): a keyed row to `toPositive(murmur2(key)) % partitions`; rows
//! without a key stick to one partition of their topic until its batch is full, then to the
//! next (Java's sticky partitioner, round-robin here rather than by load).

/// Kafka's `Utils.murmur2` (the Java client's), bit for bit.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        if rest.len() == 3 {
            h ^= u32::from(rest[2]) << 16;
        }
        if rest.len() >= 2 {
            h ^= u32::from(rest[1]) << 8;
        }
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition of `partitions` the Java producer gives a record keyed `key`.
pub fn partition_of_key(key: &[u8], partitions: i32) -> i32 {
    (murmur2(key) & 0x7fff_ffff) % partitions.max(1)
}

/// The partition rows without a key of one topic go to: one at a time, the next once its batch
/// is full ([`Sticky::next`]).
#[derive(Debug, Default, Clone)]
pub struct Sticky(Option<i32>);

impl Sticky {
    /// The current partition, drawn from `seed` the first time.
    pub fn current(&mut self, partitions: i32, seed: u64) -> i32 {
        *self
            .0
            .get_or_insert(((seed % partitions.max(1) as u64) as i32).max(0))
            % partitions.max(1)
    }

    /// Move on to the next partition (the current one's batch is full).
    pub fn next(&mut self, partitions: i32) {
        if let Some(p) = self.0.as_mut() {
            *p = (*p + 1) % partitions.max(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Utils.murmur2` and `toPositive(...) % 8` as kafka-clients 4.4.0 computes them (through
    /// jshell); the first six are also Kafka's `UtilsTest.testMurmur2` cases.
    const JAVA: [(&str, i32, i32); 11] = [
        ("21", -973932308, 4),
        ("foobar", -790332482, 6),
        ("a-little-bit-long-string", -985981536, 0),
        ("a-little-bit-longer-string", -1486304829, 3),
        (
            "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
            -58897971,
            5,
        ),
        ("abc", 479470107, 3),
        ("", 275646681, 1),
        ("a", -1563381124, 4),
        ("0", 971027396, 4),
        ("1", -1993445489, 7),
        ("999999", -79439549, 3),
    ];

    #[test]
    fn murmur2_is_the_java_clients() {
        for (key, hash, p8) in JAVA {
            assert_eq!(murmur2(key.as_bytes()), hash, "{key:?}");
            assert_eq!(partition_of_key(key.as_bytes(), 8), p8, "{key:?}");
        }
        assert_eq!(murmur2(&[0xff, 0x80, 0x7f, 0, 1]), 69563401);
    }

    #[test]
    fn keyless_rows_stick_to_a_partition_until_moved_on() {
        let mut s = Sticky::default();
        let first = s.current(3, 7);
        assert_eq!(first, 1);
        assert_eq!(s.current(3, 99), 1);
        s.next(3);
        s.next(3);
        assert_eq!(s.current(3, 0), 0);
    }
}
