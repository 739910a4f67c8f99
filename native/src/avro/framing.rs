//! Which schema an Avro key or value names, in Confluent's wire formats, and where its body
//! starts: the rules and messages of the Python package's `avro/framing.py`.
//!
//! A record header `__value_schema_id` (`__key_schema_id` for keys) holding a magic byte `1` and a
//! 16-byte GUID (or `0` and a 4-byte id) names the schema, and the whole payload is the body;
//! else the payload starts with `0` and a big-endian id, or `1` and a GUID. As in Schema
//! Registry's Java `DualSchemaIdDeserializer`: the last header of that name counts (the caller
//! finds it, [`super::records`]), it wins over the prefix unless its value is null, and bytes
//! after the schema reference in a header are ignored.

use std::fmt;

/// The header naming a key's schema.
pub const KEY_HEADER: &str = "__key_schema_id";
/// The header naming a value's schema.
pub const VALUE_HEADER: &str = "__value_schema_id";

/// A schema as a record names it: an id of its cluster's registry, or a GUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchemaRef {
    /// A Confluent schema id.
    Id(u32),
    /// A schema GUID (its 16 bytes).
    Guid([u8; 16]),
}

impl SchemaRef {
    /// The GUID as canonical text (lowercase, hyphenated), as Python's `uuid.UUID` prints it.
    pub fn guid_text(guid: &[u8; 16]) -> String {
        let hex: String = guid.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }

    /// A GUID from its canonical text (hyphens optional), or None.
    pub fn parse_guid(text: &str) -> Option<[u8; 16]> {
        let hex: Vec<u8> = text.bytes().filter(|b| *b != b'-').collect();
        if hex.len() != 32 {
            return None;
        }
        let mut guid = [0u8; 16];
        for (i, pair) in hex.chunks(2).enumerate() {
            let digits = std::str::from_utf8(pair).ok()?;
            guid[i] = u8::from_str_radix(digits, 16).ok()?;
        }
        Some(guid)
    }
}

impl fmt::Display for SchemaRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaRef::Id(id) => write!(f, "schema id {id}"),
            SchemaRef::Guid(guid) => write!(f, "schema {}", SchemaRef::guid_text(guid)),
        }
    }
}

/// The schema `payload` names (through `header`, the value of the record's last schema header
/// when there is one and it is not null) and its Avro body; else why it names none.
pub fn frame<'a>(
    payload: &'a [u8],
    header: Option<&[u8]>,
    key: bool,
) -> Result<(SchemaRef, &'a [u8]), String> {
    if let Some(value) = header {
        let name = if key { KEY_HEADER } else { VALUE_HEADER };
        return Ok((named(value, &format!("header {name}"))?, payload));
    }
    let schema = named(payload, "payload")?;
    let start = match schema {
        SchemaRef::Id(_) => 5,
        SchemaRef::Guid(_) => 17,
    };
    Ok((schema, &payload[start..]))
}

/// The schema `data` starts with.
fn named(data: &[u8], place: &str) -> Result<SchemaRef, String> {
    let Some(&magic) = data.first() else {
        return Err(format!(
            "the {place} is empty: no magic byte names its schema"
        ));
    };
    match (magic, data.len()) {
        (0, len) if len >= 5 => {
            let id = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
            Ok(SchemaRef::Id(id))
        }
        (1, len) if len >= 17 => {
            let mut guid = [0u8; 16];
            guid.copy_from_slice(&data[1..17]);
            Ok(SchemaRef::Guid(guid))
        }
        (0 | 1, len) => {
            let need = if magic == 0 { 5 } else { 17 };
            Err(format!(
                "the {place} is {len} byte(s): too short for the schema reference its magic \
                 byte {magic} announces ({need} bytes)"
            ))
        }
        _ => Err(format!(
            "the {place} starts with byte {magic}, not a magic byte (0: a schema id follows, 1: a \
             schema GUID): not written by a schema registry's serializer"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classic_prefix_names_an_id_and_the_body_follows() {
        let payload = [0, 0, 0, 1, 2, 42, 43];
        assert_eq!(
            frame(&payload, None, false),
            Ok((SchemaRef::Id(258), &payload[5..]))
        );
    }

    #[test]
    fn a_guid_prefix_and_a_header_name_guids() {
        let mut payload = vec![1];
        payload.extend(1..=16u8);
        payload.push(9);
        let (schema, body) = frame(&payload, None, false).unwrap();
        assert_eq!(body, &[9]);
        assert_eq!(
            schema.to_string(),
            "schema 01020304-0506-0708-090a-0b0c0d0e0f10"
        );
        let (from_header, whole) = frame(&[7, 8], Some(&payload[..17]), true).unwrap();
        assert_eq!((from_header, whole), (schema, &[7u8, 8][..]));
        assert_eq!(
            SchemaRef::parse_guid("01020304-0506-0708-090a-0b0c0d0e0f10"),
            Some(<[u8; 16]>::try_from(&payload[1..17]).unwrap())
        );
    }

    #[test]
    fn bytes_after_the_schema_in_a_header_are_ignored_as_java_does() {
        assert_eq!(
            frame(&[9], Some(&[0, 0, 0, 0, 7, 5, 6]), false),
            Ok((SchemaRef::Id(7), &[9u8][..]))
        );
    }

    #[test]
    fn bad_framing_says_why_as_the_python_decoder_does() {
        assert_eq!(
            frame(&[], None, false).unwrap_err(),
            "the payload is empty: no magic byte names its schema"
        );
        assert_eq!(
            frame(&[0, 1, 2], None, false).unwrap_err(),
            "the payload is 3 byte(s): too short for the schema reference its magic byte 0 \
             announces (5 bytes)"
        );
        assert_eq!(
            frame(&[7, 1], None, false).unwrap_err(),
            "the payload starts with byte 7, not a magic byte (0: a schema id follows, 1: a \
             schema GUID): not written by a schema registry's serializer"
        );
        assert_eq!(
            frame(&[0], Some(&[]), true).unwrap_err(),
            "the header __key_schema_id is empty: no magic byte names its schema"
        );
    }
}
