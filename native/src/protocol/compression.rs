//! The records of a compressed batch, decompressed: Kafka's codecs gzip (1), snappy (2), lz4 (3)
//! and zstd (4), as producers write them in record batches of message format v2.

use std::io::Read;

use super::error::Problem;
use super::primitives::{grow, read_growing};

/// Snappy as Java producers frame it (xerial's `SnappyOutputStream`): this magic, a version and
/// a compatible version, then blocks of a 4-byte length and a raw snappy block. librdkafka's
/// producers write one raw snappy block instead.
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER: usize = 16;

/// `compressed` decompressed with `codec` into `out` (cleared first), refused past `max_size`
/// bytes: what a snappy header claims is checked before anything is allocated, the stream
/// codecs stop reading one byte past the bound, and `out`'s capacity never passes it.
pub fn decompress(
    codec: i16,
    compressed: &[u8],
    out: &mut Vec<u8>,
    max_size: usize,
) -> Result<(), Problem> {
    out.clear();
    let name = match codec {
        1 => "gzip",
        2 => "snappy",
        3 => "lz4",
        4 => "zstd",
        other => {
            return Err(Problem::Unsupported(format!(
                "a record batch of compression codec {other}"
            )))
        }
    };
    let done = match codec {
        1 => bounded(
            &mut flate2::read::MultiGzDecoder::new(compressed),
            out,
            max_size,
        ),
        2 => snappy(compressed, out, max_size),
        3 => bounded(
            &mut lz4_flex::frame::FrameDecoder::new(compressed),
            out,
            max_size,
        ),
        _ => zstd::stream::read::Decoder::new(compressed)
            .map_err(|e| Failure::Broken(e.to_string()))
            .and_then(|mut d| bounded(&mut d, out, max_size)),
    };
    done.map_err(|failure| {
        Problem::Unsupported(match failure {
            Failure::Broken(e) => format!("a {name} batch that does not decompress: {e}"),
            Failure::TooLarge => format!(
                "a {name} batch that decompresses to more than {max_size} bytes \
                 (receive.message.max.bytes)"
            ),
        })
    })
}

/// Why a batch did not decompress.
enum Failure {
    Broken(String),
    TooLarge,
}

impl From<snap::Error> for Failure {
    fn from(e: snap::Error) -> Self {
        Failure::Broken(e.to_string())
    }
}

/// Everything `reader` gives, into `out`, refused past `max_size` bytes (one byte past it is
/// read to tell, into a byte of its own).
fn bounded(reader: &mut dyn Read, out: &mut Vec<u8>, max_size: usize) -> Result<(), Failure> {
    let broken = |e: std::io::Error| Failure::Broken(e.to_string());
    read_growing(reader, out, max_size).map_err(broken)?;
    if out.len() == max_size && reader.read(&mut [0u8; 1]).map_err(broken)? > 0 {
        return Err(Failure::TooLarge);
    }
    Ok(())
}

fn snappy(data: &[u8], out: &mut Vec<u8>, max_size: usize) -> Result<(), Failure> {
    let mut decoder = snap::raw::Decoder::new();
    if !data.starts_with(XERIAL_MAGIC) {
        let size = snap::raw::decompress_len(data)?;
        if size > max_size {
            return Err(Failure::TooLarge);
        }
        grow(out, size, max_size);
        out.resize(size, 0);
        decoder.decompress(data, out)?;
        return Ok(());
    }
    let broken = |what: &str| Failure::Broken(what.to_string());
    let mut rest = data
        .get(XERIAL_HEADER..)
        .ok_or_else(|| broken("a truncated xerial header"))?;
    while !rest.is_empty() {
        let len = rest
            .get(..4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| broken("a truncated block length"))?;
        let block = rest
            .get(4..4 + len)
            .ok_or_else(|| broken("a truncated block"))?;
        let size = snap::raw::decompress_len(block)?;
        let at = out.len();
        if size > max_size - at {
            return Err(Failure::TooLarge);
        }
        grow(out, size, max_size);
        out.resize(at + size, 0);
        decoder.decompress(block, &mut out[at..])?;
        rest = &rest[4 + len..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const TEXT: &[u8] = b"records records records, and some more records";

    #[test]
    fn every_codec_decompresses_what_its_encoder_wrote() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(TEXT).unwrap();
        let raw_snappy = snap::raw::Encoder::new().compress_vec(TEXT).unwrap();
        let mut xerial = XERIAL_MAGIC.to_vec();
        xerial.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        for half in [&TEXT[..10], &TEXT[10..]] {
            let block = snap::raw::Encoder::new().compress_vec(half).unwrap();
            xerial.extend_from_slice(&(block.len() as u32).to_be_bytes());
            xerial.extend_from_slice(&block);
        }
        let mut lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
        lz4.write_all(TEXT).unwrap();
        let zstd = zstd::stream::encode_all(TEXT, 1).unwrap();
        let cases = [
            (1, gz.finish().unwrap()),
            (2, raw_snappy),
            (2, xerial),
            (3, lz4.finish().unwrap()),
            (4, zstd),
        ];
        let mut out = vec![1, 2, 3];
        for (codec, data) in &cases {
            decompress(*codec, data, &mut out, TEXT.len()).unwrap();
            assert_eq!(out, TEXT, "codec {codec}");
        }
        assert!(decompress(4, b"not zstd", &mut out, 1 << 20).is_err());
        assert!(decompress(5, b"", &mut out, 1 << 20).is_err());
        // One byte under what each batch holds: refused, whatever the codec.
        for (codec, data) in &cases {
            let why = decompress(*codec, data, &mut out, TEXT.len() - 1).unwrap_err();
            assert!(
                matches!(&why, Problem::Unsupported(w) if w.contains("more than 45 bytes")),
                "codec {codec}: {why:?}"
            );
        }
    }

    #[test]
    fn a_snappy_header_claiming_4_gib_is_refused_before_allocating() {
        // A raw snappy block starts with its decompressed length as a varint: 4 GiB - 1 here,
        // the most the format can claim.
        let mut claim = vec![0xff, 0xff, 0xff, 0xff, 0x0f];
        claim.extend_from_slice(&[0; 16]);
        assert_eq!(snap::raw::decompress_len(&claim).unwrap(), (1 << 32) - 1);
        let mut out = Vec::new();
        let why = decompress(2, &claim, &mut out, 100_000_000).unwrap_err();
        assert!(matches!(why, Problem::Unsupported(w) if w.contains("more than 100000000")));
        assert_eq!(out.capacity(), 0);
        // The same claim in a xerial frame's block.
        let mut xerial = XERIAL_MAGIC.to_vec();
        xerial.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        xerial.extend_from_slice(&(claim.len() as u32).to_be_bytes());
        xerial.extend_from_slice(&claim);
        assert!(decompress(2, &xerial, &mut out, 100_000_000).is_err());
        assert_eq!(out.capacity(), 0);
    }

    #[test]
    fn a_batch_decompressing_far_past_the_bound_never_grows_the_buffer_past_it() {
        // 4 MB of zeros, a few kilobytes compressed: refused at 100,000 bytes, and read whole
        // at exactly its size, without the buffer's capacity passing the bound either way.
        let zeros = vec![0u8; 4 << 20];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&zeros).unwrap();
        let mut lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
        lz4.write_all(&zeros).unwrap();
        let raw_snappy = snap::raw::Encoder::new().compress_vec(&zeros).unwrap();
        let zstd = zstd::stream::encode_all(zeros.as_slice(), 1).unwrap();
        let bombs = [
            (1, gz.finish().unwrap()),
            (2, raw_snappy),
            (3, lz4.finish().unwrap()),
            (4, zstd),
        ];
        for (codec, data) in &bombs {
            let mut out = Vec::new();
            assert!(decompress(*codec, data, &mut out, 100_000).is_err());
            assert!(
                out.capacity() <= 100_000,
                "codec {codec}: {}",
                out.capacity()
            );
            decompress(*codec, data, &mut out, zeros.len()).unwrap();
            assert_eq!(out.len(), zeros.len());
            assert!(
                out.capacity() <= zeros.len(),
                "codec {codec}: {}",
                out.capacity()
            );
        }
    }
}
