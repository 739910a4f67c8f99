//! Arrow columns encoded as Confluent-framed Avro: the sink's `valueFormat=avro` (and
//! `keyFormat=avro`) in the core, giving the bytes of the Python package's `avro.encode.Encoder`
//! (fastavro, Confluent's framing) for the values Spark hands over.
//!
//! The writer schema and its id come from the caller (the registry's I/O stays in Python). Each
//! non-null value of the column becomes the magic byte `0`, the id's 4 bytes big-endian and the
//! Avro body; a null value is a null payload (a tombstone). Where the Python encoder might do
//! anything but write the same bytes (a value that does not fit the schema, whose error the
//! Python encoder words) the core refuses the column, naming the first such row, and the caller
//! asks the Python encoder.
//!
//! arrow-avro 60.1's writer is not used: it takes Avro's own Arrow shapes (a union as an Arrow
//! union, an enum as a dictionary), where Spark gives a union as a struct of members and an enum
//! as a string, and it does not write fastavro's bytes for a decimal or fastavro's choice of a
//! union's branch.
//!
//! - [`plan`]: the writer schema as the encoder walks it, or why the core does not encode it;
//! - [`body`]: Avro's binary encoding of the values, decimals as fastavro writes them;
//! - [`bound`]: a plan bound to a column of its Spark type, one row written as an Avro body;
//! - [`views`]: the Arrow arrays it reads: bytes-like values of any layout, lists' offsets.

pub mod body;
pub mod bound;
pub mod plan;
pub mod views;

use std::sync::Mutex;

use arrow_array::{Array, ArrayRef, BinaryArray};
use arrow_buffer::{Buffer, OffsetBuffer, ScalarBuffer};

use bound::Bound;
use plan::Plan;

/// What a column encoded to: the payloads, or the first row the core refuses to write.
pub type Encoded = Result<BinaryArray, usize>;

/// Encodes columns of one writer schema's Spark type.
pub struct AvroEncoder {
    plan: Plan,
    /// The last column's payload and offset buffers, written again by the next column once
    /// nothing else holds them (the caller dropped the column): fresh buffers each column had
    /// the kernel map and zero their pages again.
    spare: Mutex<Option<(Buffer, Buffer)>>,
}

/// `buffer`'s memory as an empty `Vec` to write again, when nothing else holds it.
fn recycled<T: arrow_buffer::ArrowNativeType>(buffer: Option<Buffer>) -> Option<Vec<T>> {
    let mut vec = buffer?.into_vec::<T>().ok()?;
    vec.clear();
    Some(vec)
}

impl AvroEncoder {
    /// An encoder of `schema` (Avro JSON, every named type written out where it is used), or
    /// why the core does not encode it as the Python encoder does.
    pub fn new(schema: &str) -> Result<Self, String> {
        let parsed: serde_json::Value =
            serde_json::from_str(schema).map_err(|e| format!("the schema is not JSON: {e}"))?;
        Ok(AvroEncoder {
            plan: Plan::of(&parsed)?,
            spare: Mutex::new(None),
        })
    }

    /// `values` as payloads framed with `schema_id` (null where a value is null). Err when the
    /// column's Arrow type is not the schema's Spark type as the core writes it.
    pub fn encode(&self, values: &ArrayRef, schema_id: u32) -> Result<Encoded, String> {
        let bound = Bound::new(&self.plan, values)?;
        let prefix = {
            let mut prefix = [0u8; 5];
            prefix[1..].copy_from_slice(&schema_id.to_be_bytes());
            prefix
        };
        let rows = values.len();
        let spare = self.spare.lock().map(|mut s| s.take()).unwrap_or_default();
        let (data, offsets) = spare.unzip();
        let mut data: Vec<u8> = recycled(data).unwrap_or_else(|| Vec::with_capacity(rows * 32));
        let mut offsets: Vec<i32> = recycled(offsets).unwrap_or_default();
        offsets.reserve(rows + 1);
        offsets.push(0);
        for row in 0..rows {
            if !bound.is_null(row) {
                data.extend_from_slice(&prefix);
                if bound.write(row, &mut data).is_err() {
                    return Ok(Err(row));
                }
            }
            let end = i32::try_from(data.len())
                .map_err(|_| "the payloads exceed a binary column's 2 GiB".to_string())?;
            offsets.push(end);
        }
        let nulls = values.logical_nulls().filter(|n| n.null_count() > 0);
        let (data, offsets) = (Buffer::from_vec(data), Buffer::from_vec(offsets));
        if let Ok(mut spare) = self.spare.lock() {
            *spare = Some((data.clone(), offsets.clone()));
        }
        let offsets = OffsetBuffer::new(ScalarBuffer::new(offsets, 0, rows + 1));
        Ok(Ok(BinaryArray::new(offsets, data, nulls)))
    }
}

#[cfg(test)]
mod tests;
