//! The records of a compressed batch, decompressed: Kafka's codecs gzip (1), snappy (2), lz4 (3)
//! and zstd (4), as producers write them in record batches of message format v2.

use std::io::Read;

use super::records::Problem;

/// Snappy as Java producers frame it (xerial's `SnappyOutputStream`): this magic, a version and
/// a compatible version, then blocks of a 4-byte length and a raw snappy block. librdkafka's
/// producers write one raw snappy block instead.
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER: usize = 16;

/// `compressed` decompressed with `codec` into `out` (cleared first).
pub fn decompress(codec: i16, compressed: &[u8], out: &mut Vec<u8>) -> Result<(), Problem> {
    out.clear();
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        Problem::Unsupported(format!("a {what} batch that does not decompress: {e}"))
    };
    match codec {
        1 => flate2::read::MultiGzDecoder::new(compressed)
            .read_to_end(out)
            .map(drop)
            .map_err(|e| failed("gzip", &e)),
        2 => snappy(compressed, out).map_err(|e| failed("snappy", &e)),
        3 => lz4_flex::frame::FrameDecoder::new(compressed)
            .read_to_end(out)
            .map(drop)
            .map_err(|e| failed("lz4", &e)),
        4 => zstd::stream::read::Decoder::new(compressed)
            .and_then(|mut d| d.read_to_end(out))
            .map(drop)
            .map_err(|e| failed("zstd", &e)),
        other => Err(Problem::Unsupported(format!(
            "a record batch of compression codec {other}"
        ))),
    }
}

fn snappy(data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let mut decoder = snap::raw::Decoder::new();
    if !data.starts_with(XERIAL_MAGIC) {
        let size = snap::raw::decompress_len(data).map_err(|e| e.to_string())?;
        out.resize(size, 0);
        decoder.decompress(data, out).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let mut rest = data
        .get(XERIAL_HEADER..)
        .ok_or("a truncated xerial header")?;
    while !rest.is_empty() {
        let len = rest
            .get(..4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or("a truncated block length")?;
        let block = rest.get(4..4 + len).ok_or("a truncated block")?;
        let size = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
        let at = out.len();
        out.resize(at + size, 0);
        decoder
            .decompress(block, &mut out[at..])
            .map_err(|e| e.to_string())?;
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
        for (codec, data) in cases {
            decompress(codec, &data, &mut out).unwrap();
            assert_eq!(out, TEXT, "codec {codec}");
        }
        assert!(decompress(4, b"not zstd", &mut out).is_err());
        assert!(decompress(5, b"", &mut out).is_err());
    }
}
