//! Avro unions of several types, as arrow-avro reads them (an Arrow union, its `null` branch a
//! child of Arrow's null type) made into what Spark reads: a struct of nullable `member0`,
//! `member1`, ... in branch order without `null` (the written branch set, the others null; the
//! struct null when `null` was written), or for `int` with `long` a long and for `float` with
//! `double` a double. A union whose only branch besides `null` is one type (arrow-avro reads a
//! writer's `["null", "bytes", "string"]` into a reader's `["null", "string"]` so) is that type,
//! null where `null` was written.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{make_array, Array, ArrayRef, Float64Array, Int64Array, StructArray, UnionArray};
use arrow_buffer::NullBuffer;
use arrow_data::transform::MutableArrayData;
use arrow_schema::{DataType, Fields};

use super::conform::conform;

/// `array` (an Arrow union) as Spark's `target`, or why it cannot be.
pub fn conform_union(array: &ArrayRef, target: &DataType) -> Result<ArrayRef, String> {
    let union = array.as_union();
    let DataType::Union(fields, _) = array.data_type() else {
        return Err("not a union".into());
    };
    // The branches other than null, in order: (type id, child).
    let branches: Vec<(i8, &ArrayRef)> = fields
        .iter()
        .filter(|(_, f)| f.data_type() != &DataType::Null)
        .map(|(id, _)| (id, union.child(id)))
        .collect();
    let written = |row: usize| -> Option<(usize, usize)> {
        let id = union.type_id(row);
        let branch = branches.iter().position(|(b, _)| *b == id)?;
        Some((branch, union.value_offset(row)))
    };
    match target {
        DataType::Struct(members) if members.len() == branches.len() => {
            members_of(union, &branches, members, written)
        }
        DataType::Int64 | DataType::Float64 if branches.len() == 2 => {
            widened(union.len(), &branches, target, written)
        }
        _ if branches.len() == 1 && !matches!(target, DataType::Struct(_)) => {
            let child = conform(branches[0].1, target)?;
            column_of(&child, 0, union.len(), &written)
        }
        _ => Err(format!(
            "arrow-avro reads it as {}, which has no conversion to Spark's {target}",
            array.data_type()
        )),
    }
}

fn members_of(
    union: &UnionArray,
    branches: &[(i8, &ArrayRef)],
    members: &Fields,
    written: impl Fn(usize) -> Option<(usize, usize)>,
) -> Result<ArrayRef, String> {
    let rows = union.len();
    let mut columns = Vec::with_capacity(members.len());
    for (k, ((_, child), member)) in branches.iter().zip(members.iter()).enumerate() {
        let child = conform(child, member.data_type())?;
        columns.push(column_of(&child, k, rows, &written)?);
    }
    let valid: NullBuffer = (0..rows).map(|row| written(row).is_some()).collect();
    let nulls = (valid.null_count() > 0).then_some(valid);
    let members =
        StructArray::try_new(members.clone(), columns, nulls).map_err(|e| e.to_string())?;
    Ok(Arc::new(members))
}

/// The rows of `child` (branch `k`'s values) where branch `k` was written, null elsewhere.
fn column_of(
    child: &ArrayRef,
    k: usize,
    rows: usize,
    written: &impl Fn(usize) -> Option<(usize, usize)>,
) -> Result<ArrayRef, String> {
    let data = child.to_data();
    let mut column = MutableArrayData::new(vec![&data], true, rows);
    for row in 0..rows {
        match written(row) {
            Some((branch, at)) if branch == k => column.try_extend(0, at, at + 1),
            _ => column.try_extend_nulls(1),
        }
        .map_err(|e| e.to_string())?;
    }
    Ok(make_array(column.freeze()))
}

fn widened(
    rows: usize,
    branches: &[(i8, &ArrayRef)],
    target: &DataType,
    written: impl Fn(usize) -> Option<(usize, usize)>,
) -> Result<ArrayRef, String> {
    let child = |branch: usize| branches[branch].1;
    let kinds: Vec<&DataType> = branches.iter().map(|(_, c)| c.data_type()).collect();
    match (target, kinds.as_slice()) {
        (
            DataType::Int64,
            [DataType::Int32 | DataType::Int64, DataType::Int32 | DataType::Int64],
        ) => {
            let value = |branch: usize, at: usize| match child(branch).data_type() {
                DataType::Int32 => i64::from(child(branch).as_primitive::<Int32Type>().value(at)),
                _ => child(branch).as_primitive::<Int64Type>().value(at),
            };
            let longs: Int64Array = (0..rows)
                .map(|row| written(row).map(|(branch, at)| value(branch, at)))
                .collect();
            Ok(Arc::new(longs))
        }
        (
            DataType::Float64,
            [DataType::Float32 | DataType::Float64, DataType::Float32 | DataType::Float64],
        ) => {
            let value = |branch: usize, at: usize| match child(branch).data_type() {
                DataType::Float32 => {
                    f64::from(child(branch).as_primitive::<Float32Type>().value(at))
                }
                _ => child(branch).as_primitive::<Float64Type>().value(at),
            };
            let doubles: Float64Array = (0..rows)
                .map(|row| written(row).map(|(branch, at)| value(branch, at)))
                .collect();
            Ok(Arc::new(doubles))
        }
        _ => Err(format!(
            "a union of {kinds:?} has no conversion to Spark's {target}"
        )),
    }
}
