//! What a process makes once per key and keeps, the newest [`KEPT`]: TLS contexts
//! ([`super::tls`]) and SCRAM's salted passwords ([`super::scram`]), each milliseconds of CPU
//! that every new connection of a task would pay again.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// How many values a [`Kept`] holds at most (the oldest goes first).
pub const KEPT: usize = 16;

/// Values made once per key, newest last, in this process's memory only.
pub struct Kept<K, V>(Mutex<Vec<(K, V)>>);

impl<K: PartialEq, V: Clone> Kept<K, V> {
    pub const fn new() -> Self {
        Kept(Mutex::new(Vec::new()))
    }

    /// The value kept for `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        let all = self.lock();
        all.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    /// The value of `key`: the one kept, else `make`'s, kept when made (a failure is not kept).
    /// `make` runs without the lock: two threads may both make a value, and one is kept.
    pub fn get_or_make<E>(&self, key: K, make: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        if let Some(value) = self.get(&key) {
            return Ok(value);
        }
        let value = make()?;
        let mut all = self.lock();
        if !all.iter().any(|(k, _)| *k == key) {
            if all.len() == KEPT {
                all.remove(0);
            }
            all.push((key, value.clone()));
        }
        Ok(value)
    }

    /// How many values are kept.
    #[cfg(test)]
    fn count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(K, V)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_made_once_a_failure_never_kept_and_the_oldest_goes_first() {
        let kept: Kept<u32, String> = Kept::new();
        let mut made = 0;
        for _ in 0..2 {
            let v = kept.get_or_make(1, || -> Result<_, ()> {
                made += 1;
                Ok("one".to_string())
            });
            assert_eq!(v, Ok("one".to_string()));
        }
        assert_eq!(made, 1);
        assert_eq!(kept.get_or_make(2, || Err("refused")), Err("refused"));
        assert_eq!((kept.get(&2), kept.count()), (None, 1));
        for key in 2..=KEPT as u32 + 1 {
            kept.get_or_make(key, || -> Result<_, ()> { Ok(key.to_string()) })
                .unwrap();
        }
        assert_eq!((kept.get(&1), kept.count()), (None, KEPT));
        assert_eq!(kept.get(&(KEPT as u32 + 1)), Some((KEPT + 1).to_string()));
    }
}
