//! Avro's binary encoding of the values a bound column writes: longs (and ints) as zig-zag
//! varints, bytes and strings with their length, arrays' and maps' blocks, a union's branch, and
//! decimals as fastavro writes them.

use super::bound::Refused;
use super::views::Bytes;

type Written = Result<(), Refused>;

/// Avro's `long` (and `int`): zig-zag, then 7 bits a byte.
pub fn long(value: i64, out: &mut Vec<u8>) {
    let mut n = ((value << 1) ^ (value >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A union's branch index.
pub fn branch(index: usize, out: &mut Vec<u8>) -> Written {
    long(index as i64, out);
    Ok(())
}

pub fn bytes(value: &[u8], out: &mut Vec<u8>) {
    long(value.len() as i64, out);
    out.extend_from_slice(value);
}

/// An array's or a map's one block's count (none for an empty one, whose end is all there is).
pub fn block(count: usize, out: &mut Vec<u8>) {
    if count > 0 {
        long(count as i64, out);
    }
}

pub fn has_twice(keys: &Bytes<'_>, start: usize, end: usize) -> bool {
    let mut seen: Vec<&[u8]> = (start..end).map(|i| keys.value(i)).collect();
    seen.sort_unstable();
    seen.windows(2).any(|pair| pair[0] == pair[1])
}

/// A decimal's unscaled `value` as fastavro writes it: `bytes` of (magnitude's bits + 8) / 8
/// bytes, or sign-extended to the `fixed`'s size; refused beyond the precision (`bound` is ten to
/// its power) or the size.
pub fn decimal(value: i128, bound: i128, size: Option<usize>, out: &mut Vec<u8>) -> Written {
    let magnitude = value.unsigned_abs();
    if magnitude >= bound.unsigned_abs() {
        return Err(Refused);
    }
    let bits = 128 - magnitude.leading_zeros() as usize;
    let be = value.to_be_bytes();
    match size {
        None => {
            let length = (bits + 8) / 8;
            bytes(&be[16 - length..], out);
        }
        Some(size) => {
            if bits + 1 > size * 8 {
                return Err(Refused);
            }
            let fill = if value < 0 { 0xff } else { 0 };
            let kept = size.min(16);
            out.extend(std::iter::repeat_n(fill, size - kept));
            out.extend_from_slice(&be[16 - kept..]);
        }
    }
    Ok(())
}
