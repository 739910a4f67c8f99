//! A [`Plan`] bound to the Arrow array of its Spark type, and one row of it written as an Avro
//! body: the bytes fastavro writes for the value the Python encoder makes of the row.
//!
//! Binding fails (the column is not of a type the core writes: the Python encoder writes it)
//! when the array's type is not the one Spark gives the node. Writing a row fails, without a
//! reason, wherever the Python encoder might do anything but write the same bytes: a null where
//! the schema has none, a symbol outside the enum, a fixed of another size, a decimal of more
//! digits than its precision, a date or timestamp outside the years Python's `datetime` holds, a
//! map with a key twice. The caller then hands the column to the Python encoder, whose answer
//! (its bytes, or its error) is the answer.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    Time64MicrosecondType, Time64NanosecondType, TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef, PrimitiveArray, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, TimeUnit};

use super::body::{block, branch, bytes, decimal, has_twice, long};
use super::plan::Plan;
use super::views::{Bytes, Offsets};

/// A row the core does not write (the Python encoder decides it).
#[derive(Debug, PartialEq, Eq)]
pub struct Refused;

type Written = Result<(), Refused>;

/// Python's `datetime` range in microseconds from the epoch, a day inside each end (a
/// timestamp with a time zone is made a `datetime` in that zone).
const MIN_US: i64 = -62_135_596_800_000_000 + 86_400_000_000;
const MAX_US: i64 = 253_402_300_799_999_999 - 86_400_000_000;
/// Python's `date` range in days from the epoch.
const MIN_DAY: i32 = -719_162;
const MAX_DAY: i32 = 2_932_896;
const DAY_US: i64 = 86_400_000_000;

enum Kind<'a> {
    Null,
    Boolean(&'a arrow_array::BooleanArray),
    Int(&'a PrimitiveArray<Int32Type>),
    Long(&'a PrimitiveArray<Int64Type>),
    Float(&'a PrimitiveArray<Float32Type>),
    Double(&'a PrimitiveArray<Float64Type>),
    Bytes(Bytes<'a>),
    Date(&'a PrimitiveArray<Date32Type>),
    Timestamp(&'a PrimitiveArray<TimestampMicrosecondType>, bool),
    TimeOfDay(&'a PrimitiveArray<Time64MicrosecondType>),
    TimeOfDayNanos(&'a PrimitiveArray<Time64NanosecondType>),
    Decimal(&'a PrimitiveArray<Decimal128Type>, i128, Option<usize>),
    Enum(Bytes<'a>, &'a [String]),
    Fixed(Bytes<'a>, usize),
    Record(Vec<Bound<'a>>),
    Array(Offsets<'a>, Box<Bound<'a>>),
    Map(Offsets<'a>, Bytes<'a>, Box<Bound<'a>>),
    Nullable(Option<usize>, usize, Box<Bound<'a>>),
    OnlyNull(usize),
    IntOrLong(Option<usize>, usize, usize, &'a PrimitiveArray<Int64Type>),
    FloatOrDouble(Option<usize>, usize, &'a PrimitiveArray<Float64Type>),
    Members(Option<usize>, Vec<(usize, Bound<'a>)>),
}

/// A plan bound to its array: [`Bound::write`] writes a row.
pub struct Bound<'a> {
    nulls: Option<NullBuffer>,
    kind: Kind<'a>,
}

fn mismatch(plan: &Plan, array: &ArrayRef) -> String {
    format!("an Arrow {} column for {plan:?}", array.data_type())
}

impl<'a> Bound<'a> {
    /// `plan` bound to `array`, or why the core does not write a column of its type.
    pub fn new(plan: &'a Plan, array: &'a ArrayRef) -> Result<Self, String> {
        let wrong = || mismatch(plan, array);
        let kind = match (plan, array.data_type()) {
            (Plan::Null, DataType::Null) => Kind::Null,
            (Plan::Boolean, DataType::Boolean) => Kind::Boolean(array.as_boolean()),
            (Plan::Int, DataType::Int32) => Kind::Int(array.as_primitive()),
            (Plan::Long, DataType::Int64) => Kind::Long(array.as_primitive()),
            (Plan::TimeMicros, DataType::Int64) => Kind::Long(array.as_primitive()),
            (Plan::Float, DataType::Float32) => Kind::Float(array.as_primitive()),
            (Plan::Double, DataType::Float64) => Kind::Double(array.as_primitive()),
            (Plan::Bytes, _) => Kind::Bytes(Bytes::binary(array).ok_or_else(wrong)?),
            (Plan::String, _) => Kind::Bytes(Bytes::text(array).ok_or_else(wrong)?),
            (Plan::Date, DataType::Date32) => Kind::Date(array.as_primitive()),
            (Plan::Timestamp { millis, local }, DataType::Timestamp(TimeUnit::Microsecond, tz))
                if !*local || tz.as_deref().is_none_or(|tz| tz == "UTC") =>
            {
                Kind::Timestamp(array.as_primitive(), *millis)
            }
            (Plan::TimeMicros, DataType::Time64(TimeUnit::Microsecond)) => {
                Kind::TimeOfDay(array.as_primitive())
            }
            (Plan::TimeMicros, DataType::Time64(TimeUnit::Nanosecond)) => {
                Kind::TimeOfDayNanos(array.as_primitive())
            }
            (
                Plan::Decimal {
                    precision,
                    scale,
                    size,
                },
                DataType::Decimal128(_, s),
            ) if s == scale => Kind::Decimal(array.as_primitive(), 10i128.pow(*precision), *size),
            (Plan::Enum(symbols), _) => {
                Kind::Enum(Bytes::text(array).ok_or_else(wrong)?, symbols.as_slice())
            }
            (Plan::Fixed(size), _) => Kind::Fixed(Bytes::binary(array).ok_or_else(wrong)?, *size),
            (Plan::Record(fields), DataType::Struct(_)) => {
                let columns = array.as_struct();
                let bound = fields
                    .iter()
                    .map(|(name, plan)| match columns.column_by_name(name) {
                        Some(column) => Bound::new(plan, column),
                        None => Err(format!("a struct without the field {name:?}")),
                    })
                    .collect::<Result<_, _>>()?;
                Kind::Record(bound)
            }
            (Plan::Array(items), DataType::List(_)) => {
                let list = array.as_list::<i32>();
                let items = Bound::new(items, list.values())?;
                Kind::Array(Offsets::Small(list.offsets()), Box::new(items))
            }
            (Plan::Array(items), DataType::LargeList(_)) => {
                let list = array.as_list::<i64>();
                let items = Bound::new(items, list.values())?;
                Kind::Array(Offsets::Large(list.offsets()), Box::new(items))
            }
            (Plan::Map(values), DataType::Map(_, _)) => {
                let map = array.as_map();
                let keys = Bytes::text(map.keys()).ok_or_else(wrong)?;
                let values = Bound::new(values, map.values())?;
                Kind::Map(Offsets::Small(map.offsets()), keys, Box::new(values))
            }
            (Plan::Nullable { null, value, plan }, _) => {
                Kind::Nullable(*null, *value, Box::new(Bound::new(plan, array)?))
            }
            (Plan::OnlyNull(index), _) => Kind::OnlyNull(*index),
            (Plan::IntOrLong { null, int, long }, DataType::Int64) => {
                Kind::IntOrLong(*null, *int, *long, array.as_primitive())
            }
            (Plan::FloatOrDouble { null, double }, DataType::Float64) => {
                Kind::FloatOrDouble(*null, *double, array.as_primitive())
            }
            (Plan::Members { null, members }, DataType::Struct(_)) => {
                let columns: &StructArray = array.as_struct();
                if columns.num_columns() != members.len() {
                    return Err(wrong());
                }
                let bound = members
                    .iter()
                    .enumerate()
                    .map(
                        |(i, (index, plan))| match columns.column_by_name(&format!("member{i}")) {
                            Some(column) => Ok((*index, Bound::new(plan, column)?)),
                            None => Err(wrong()),
                        },
                    )
                    .collect::<Result<_, String>>()?;
                Kind::Members(*null, bound)
            }
            _ => return Err(wrong()),
        };
        Ok(Bound {
            // A validity buffer without a null (Spark sends one with every column) is not read.
            nulls: array.logical_nulls().filter(|n| n.null_count() > 0),
            kind,
        })
    }

    /// Whether the value at `row` is null.
    pub fn is_null(&self, row: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }

    /// Write the value at `row` (its Avro body), or refuse it. Inlined where it is called (a
    /// record's loop over its fields): a leaf is then written without a call.
    #[inline(always)]
    pub fn write(&self, row: usize, out: &mut Vec<u8>) -> Written {
        match self.leaf(row, out) {
            Some(written) => written,
            None => self.compound(row, out),
        }
    }

    /// A leaf's value at `row` written (or refused); `None` for a record, array, map or union,
    /// which [`Bound::compound`] writes.
    #[inline(always)]
    fn leaf(&self, row: usize, out: &mut Vec<u8>) -> Option<Written> {
        match &self.kind {
            Kind::Record(_)
            | Kind::Array(..)
            | Kind::Map(..)
            | Kind::Nullable(..)
            | Kind::IntOrLong(..)
            | Kind::FloatOrDouble(..)
            | Kind::Members(..) => return None,
            Kind::Null => return Some(Ok(())),
            Kind::OnlyNull(index) => return Some(branch(*index, out)),
            _ if self.is_null(row) => return Some(Err(Refused)),
            _ => {}
        }
        match &self.kind {
            Kind::Boolean(a) => out.push(u8::from(a.value(row))),
            Kind::Int(a) => long(i64::from(a.value(row)), out),
            Kind::Long(a) => long(a.value(row), out),
            Kind::Float(a) => out.extend_from_slice(&a.value(row).to_le_bytes()),
            Kind::Double(a) => out.extend_from_slice(&a.value(row).to_le_bytes()),
            Kind::Bytes(a) => bytes(a.value(row), out),
            Kind::Date(a) => {
                let day = a.value(row);
                if !(MIN_DAY..=MAX_DAY).contains(&day) {
                    return Some(Err(Refused));
                }
                long(i64::from(day), out)
            }
            Kind::Timestamp(a, millis) => {
                let micros = a.value(row);
                if !(MIN_US..=MAX_US).contains(&micros) {
                    return Some(Err(Refused));
                }
                long(
                    if *millis {
                        micros.div_euclid(1000)
                    } else {
                        micros
                    },
                    out,
                )
            }
            Kind::TimeOfDay(a) => {
                let micros = a.value(row);
                if !(0..DAY_US).contains(&micros) {
                    return Some(Err(Refused));
                }
                long(micros, out)
            }
            Kind::TimeOfDayNanos(a) => {
                // Spark's time(6) in Arrow: whole microseconds of the day
                let nanos = a.value(row);
                if !(0..DAY_US * 1000).contains(&nanos) || nanos % 1000 != 0 {
                    return Some(Err(Refused));
                }
                long(nanos / 1000, out)
            }
            Kind::Decimal(a, bound, size) => {
                if decimal(a.value(row), *bound, *size, out).is_err() {
                    return Some(Err(Refused));
                }
            }
            Kind::Enum(a, symbols) => {
                let symbol = a.value(row);
                let index = symbols.iter().position(|s| s.as_bytes() == symbol);
                match index {
                    Some(index) => long(index as i64, out),
                    None => return Some(Err(Refused)),
                }
            }
            Kind::Fixed(a, size) => {
                let value = a.value(row);
                if value.len() != *size {
                    return Some(Err(Refused));
                }
                out.extend_from_slice(value)
            }
            _ => unreachable!("not a leaf: returned above"),
        }
        Some(Ok(()))
    }

    /// A record's, array's, map's or union's value at `row` written, or refused.
    fn compound(&self, row: usize, out: &mut Vec<u8>) -> Written {
        let null = self.is_null(row);
        match &self.kind {
            Kind::Nullable(null_index, value, plan) => {
                return match (null, null_index) {
                    (true, Some(index)) => branch(*index, out),
                    (true, None) => Err(Refused),
                    (false, _) => {
                        long(*value as i64, out);
                        plan.write(row, out)
                    }
                }
            }
            Kind::IntOrLong(Some(index), ..)
            | Kind::FloatOrDouble(Some(index), ..)
            | Kind::Members(Some(index), _)
                if null =>
            {
                return branch(*index, out)
            }
            _ if null => return Err(Refused),
            _ => {}
        }
        match &self.kind {
            Kind::Record(fields) => {
                for field in fields {
                    field.write(row, out)?;
                }
            }
            Kind::Array(offsets, items) => {
                let (start, end) = offsets.range(row);
                block(end - start, out);
                for item in start..end {
                    items.write(item, out)?;
                }
                out.push(0);
            }
            Kind::Map(offsets, keys, values) => {
                let (start, end) = offsets.range(row);
                if has_twice(keys, start, end) {
                    return Err(Refused); // Python keeps the last value where the key is first
                }
                block(end - start, out);
                for entry in start..end {
                    bytes(keys.value(entry), out);
                    values.write(entry, out)?;
                }
                out.push(0);
            }
            Kind::IntOrLong(_, int, long_index, a) => {
                let value = a.value(row);
                let fits = i32::try_from(value).is_ok();
                long(
                    if int < long_index && fits {
                        *int
                    } else {
                        *long_index
                    } as i64,
                    out,
                );
                long(value, out)
            }
            Kind::FloatOrDouble(_, double, a) => {
                long(*double as i64, out);
                out.extend_from_slice(&a.value(row).to_le_bytes())
            }
            Kind::Members(null_index, members) => {
                let set = members.iter().find(|(_, member)| !member.is_null(row));
                match (set, null_index) {
                    (Some((index, member)), _) => {
                        long(*index as i64, out);
                        member.write(row, out)?
                    }
                    (None, Some(index)) => long(*index as i64, out),
                    (None, None) => return Err(Refused),
                }
            }
            _ => unreachable!("a leaf: written by Bound::leaf"),
        }
        Ok(())
    }
}
