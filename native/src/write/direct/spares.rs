//! The buffers of acknowledged batches, kept for the next batches to be written in ([`Spares`]):
//! a batch's bytes go into memory the process already has, at its full size, not into fresh
//! pages (each one faulted in and zeroed by the kernel) grown by doubling (each growth a copy).

/// Buffers handed back, up to a number of bytes of capacity in all.
#[derive(Debug, Default)]
pub struct Spares {
    kept: Vec<Vec<u8>>,
    bytes: usize,
    limit: usize,
}

impl Spares {
    /// Keeping at most `limit` bytes of capacity.
    pub fn new(limit: usize) -> Self {
        Spares {
            limit,
            ..Spares::default()
        }
    }

    /// Keep `buffer` for a later batch, unless that would pass the limit (it is then freed).
    pub fn keep(&mut self, buffer: Vec<u8>) {
        if self.bytes + buffer.capacity() <= self.limit {
            self.bytes += buffer.capacity();
            self.kept.push(buffer);
        }
    }

    /// A kept buffer (its bytes are stale: the taker empties it), the last kept first.
    pub fn take(&mut self) -> Option<Vec<u8>> {
        let buffer = self.kept.pop()?;
        self.bytes -= buffer.capacity();
        Some(buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_kept_up_to_the_limit_and_taken_back() {
        let mut spares = Spares::new(300);
        spares.keep(Vec::with_capacity(100));
        spares.keep(Vec::with_capacity(150));
        spares.keep(Vec::with_capacity(100)); // 350 > 300: freed
        assert_eq!(spares.take().map(|b| b.capacity()), Some(150));
        spares.keep(Vec::with_capacity(200));
        assert_eq!(spares.take().map(|b| b.capacity()), Some(200));
        assert_eq!(spares.take().map(|b| b.capacity()), Some(100));
        assert!(spares.take().is_none());
    }
}
