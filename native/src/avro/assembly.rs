//! A batch's decoded values put in row order: where each record's value is (an array decoded
//! from a run of one writer schema's bodies, or nowhere), the values copied out in spans, each
//! record's Confluent schema id, and the failures in row order.

use arrow_array::{make_array, new_null_array, Array, ArrayRef, Int32Array};
use arrow_data::transform::MutableArrayData;
use arrow_schema::DataType;

use super::{Decoded, Failure, SchemaRef};

/// Where a record's value is: row `row` of decoded array `array`, or nowhere (null).
#[derive(Clone, Copy)]
pub struct Slot {
    array: u32,
    row: u32,
}

impl Slot {
    const NULL: Slot = Slot {
        array: u32::MAX,
        row: 0,
    };

    /// Row `row` of decoded array `array`.
    pub fn at(array: usize, row: usize) -> Self {
        let narrow = |n: usize| u32::try_from(n).expect("a batch of under 2^32 records");
        Slot {
            array: narrow(array),
            row: narrow(row),
        }
    }

    fn value(self) -> Option<(usize, usize)> {
        (self.array != u32::MAX).then_some((self.array as usize, self.row as usize))
    }
}

/// A batch's output so far: each record's [`Slot`] (null until decoded), the decoded arrays with
/// the Confluent id of their writer schema (None for a GUID), and the failures.
pub struct Output {
    pub slots: Vec<Slot>,
    pub arrays: Vec<ArrayRef>,
    ids: Vec<Option<i32>>,
    pub failures: Vec<Failure>,
}

impl Output {
    /// The output of a batch of `records` records, none decoded yet.
    pub fn new(records: usize) -> Self {
        Output {
            slots: vec![Slot::NULL; records],
            arrays: Vec::new(),
            ids: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// `array`, decoded from bodies written with `schema`: its index.
    pub fn add(&mut self, schema: SchemaRef, array: ArrayRef) -> usize {
        self.arrays.push(array);
        self.ids.push(match schema {
            SchemaRef::Id(id) => Some(id as i32),
            SchemaRef::Guid(_) => None,
        });
        self.arrays.len() - 1
    }

    /// The values in row order (of `target`), the schema ids, the failures in row order.
    pub fn into_decoded(mut self, target: &DataType) -> Result<Decoded, String> {
        self.failures.sort_by_key(|f| f.row);
        let schema_ids: Int32Array = self
            .slots
            .iter()
            .map(|slot| slot.value().and_then(|(array, _)| self.ids[array]))
            .collect();
        Ok(Decoded {
            values: assemble(&self.slots, &self.arrays, target)?,
            schema_ids,
            failures: self.failures,
        })
    }
}

/// The values in row order: spans of rows copied from the decoded arrays, nulls between.
fn assemble(slots: &[Slot], arrays: &[ArrayRef], target: &DataType) -> Result<ArrayRef, String> {
    if arrays.len() == 1 && arrays[0].len() == slots.len() {
        return Ok(arrays[0].clone()); // one run of every record: as decoded
    }
    if arrays.is_empty() {
        return Ok(new_null_array(target, slots.len()));
    }
    let data: Vec<_> = arrays.iter().map(|a| a.to_data()).collect();
    let mut out = MutableArrayData::new(data.iter().collect(), true, slots.len());
    let mut span: Option<(usize, usize, usize)> = None; // array, start, end
    for slot in slots {
        match (slot.value(), span) {
            (Some((array, row)), Some((a, start, end))) if a == array && end == row => {
                span = Some((a, start, end + 1));
            }
            (Some((array, row)), _) => {
                if let Some((a, start, end)) = span.replace((array, row, row + 1)) {
                    out.try_extend(a, start, end).map_err(|e| e.to_string())?;
                }
            }
            (None, _) => {
                if let Some((a, start, end)) = span.take() {
                    out.try_extend(a, start, end).map_err(|e| e.to_string())?;
                }
                out.try_extend_nulls(1).map_err(|e| e.to_string())?;
            }
        }
    }
    if let Some((a, start, end)) = span {
        out.try_extend(a, start, end).map_err(|e| e.to_string())?;
    }
    Ok(make_array(out.freeze()))
}
