//! arrow-avro's Arrow types made into the Arrow types of Spark's (those `to_arrow_type` gives for
//! spark-avro's Spark type of the schema): enums as strings, fixed as binary, timestamps in
//! microseconds at "UTC", `time-micros` in nanoseconds, `time-millis` as an int32 of
//! milliseconds, nested types rebuilt with Spark's field names and
//! nullability, unions of several types as [`super::union`] says. Anything else (an Avro
//! `duration`, or a `uuid`, which the caller gives as its base type: arrow-avro parses a `uuid`
//! string, where Java reads any text) has no conversion: the decoder is refused and the Python
//! decoder reads such a schema.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Int32Type, Time32MillisecondType, Time64MicrosecondType, Time64NanosecondType,
    TimestampMicrosecondType, TimestampMillisecondType,
};
use arrow_array::{
    new_empty_array, Array, ArrayRef, BinaryArray, Int32Array, ListArray, MapArray, StringArray,
    StructArray,
};
use arrow_schema::{DataType, TimeUnit};

/// Whether arrays of `source` convert to `target` (checked on an empty array: the same code).
pub fn check(source: &DataType, target: &DataType) -> Result<(), String> {
    conform(&new_empty_array(source), target).map(|_| ())
}

/// `array` as an array of `target`, or why it cannot be.
pub fn conform(array: &ArrayRef, target: &DataType) -> Result<ArrayRef, String> {
    let source = array.data_type();
    if source == &DataType::Date32 {
        let days = array.as_primitive::<Date32Type>();
        if let Some(day) = days
            .iter()
            .flatten()
            .find(|d| !(FIRST_DAY..=LAST_DAY).contains(d))
        {
            return Err(format!(
                "the date {day} (days since 1970) is not in the years 1 to 9999"
            ));
        }
    }
    if source == target {
        return Ok(array.clone());
    }
    let nulls = array.nulls().cloned();
    let converted: ArrayRef = match (source, target) {
        (DataType::Struct(have), DataType::Struct(want)) => {
            let names = |f: &arrow_schema::Fields| -> Vec<String> {
                f.iter().map(|f| f.name().clone()).collect()
            };
            if names(have) != names(want) {
                return Err(mismatch(source, target));
            }
            let array = array.as_struct();
            let children = array
                .columns()
                .iter()
                .zip(want.iter())
                .map(|(child, field)| conform(child, field.data_type()))
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(
                StructArray::try_new(want.clone(), children, nulls).map_err(|e| e.to_string())?,
            )
        }
        (DataType::List(_), DataType::List(want)) => {
            let array = array.as_list::<i32>();
            let values = conform(array.values(), want.data_type())?;
            Arc::new(
                ListArray::try_new(want.clone(), array.offsets().clone(), values, nulls)
                    .map_err(|e| e.to_string())?,
            )
        }
        (DataType::Map(_, _), DataType::Map(want, ordered)) => {
            let array = array.as_map();
            let entries: ArrayRef = Arc::new(array.entries().clone());
            let entries = conform(&entries, want.data_type())?.as_struct().clone();
            Arc::new(
                MapArray::try_new(
                    want.clone(),
                    array.offsets().clone(),
                    entries,
                    nulls,
                    *ordered,
                )
                .map_err(|e| e.to_string())?,
            )
        }
        (DataType::Dictionary(index, values), DataType::Utf8)
            if **index == DataType::Int32 && **values == DataType::Utf8 =>
        {
            let array = array.as_dictionary::<Int32Type>();
            let symbols = array.values().as_string::<i32>();
            let text: StringArray = array
                .keys()
                .iter()
                .map(|k| k.map(|k| symbols.value(k as usize)))
                .collect();
            Arc::new(text)
        }
        (DataType::Timestamp(unit, _), DataType::Timestamp(TimeUnit::Microsecond, zone)) => {
            let micros = match unit {
                TimeUnit::Millisecond => {
                    array
                        .as_primitive::<TimestampMillisecondType>()
                        .try_unary::<_, TimestampMicrosecondType, _>(|v| moment(v, 1))?
                }
                TimeUnit::Microsecond => {
                    array
                        .as_primitive::<TimestampMicrosecondType>()
                        .try_unary::<_, TimestampMicrosecondType, _>(|v| moment(v, 1000))?
                }
                _ => return Err(mismatch(source, target)),
            };
            Arc::new(micros.with_timezone_opt(zone.clone()))
        }
        (DataType::Time64(TimeUnit::Microsecond), DataType::Time64(TimeUnit::Nanosecond)) => {
            Arc::new(
                array
                    .as_primitive::<Time64MicrosecondType>()
                    .try_unary::<_, Time64NanosecondType, _>(|v| {
                        time_of_day(v, DAY_MICROS, 1000)
                    })?,
            )
        }
        (DataType::Time32(TimeUnit::Millisecond), DataType::Int32) => {
            let array = array.as_primitive::<Time32MillisecondType>();
            // Spark's int, any int: Java and spark-avro read one outside a day as it is.
            let millis: Int32Array = array.unary(|v| v);
            Arc::new(millis)
        }
        (DataType::FixedSizeBinary(_), DataType::Binary) => {
            let bytes: BinaryArray = array.as_fixed_size_binary().iter().collect();
            Arc::new(bytes)
        }
        (DataType::Union(_, _), _) => super::union::conform_union(array, target)?,
        _ => return Err(mismatch(source, target)),
    };
    Ok(converted)
}

/// What Python's `datetime` holds (years 1 to 9999), which the Python decoder reads values into:
/// a value outside fails its record there, so it fails here too. In milliseconds since 1970
/// (timestamps) and days since 1970 (dates).
const FIRST_MS: i64 = -62_135_596_800_000;
const LAST_MS: i64 = 253_402_300_799_999;
const FIRST_DAY: i32 = -719_162;
const LAST_DAY: i32 = 2_932_896;
const DAY_MICROS: i64 = 86_400_000_000;

/// A timestamp of `per_ms` units per millisecond in microseconds, if in the years 1 to 9999.
fn moment(v: i64, per_ms: i64) -> Result<i64, String> {
    let micros_per = 1000 / per_ms;
    let (first, last) = (FIRST_MS * per_ms, LAST_MS * per_ms + (per_ms - 1));
    if (first..=last).contains(&v) {
        Ok(v * micros_per)
    } else {
        Err(format!("the timestamp {v} is not in the years 1 to 9999"))
    }
}

/// A time of day of `per_day` units a day, times `scale`, if within a day.
fn time_of_day(v: i64, per_day: i64, scale: i64) -> Result<i64, String> {
    if (0..per_day).contains(&v) {
        Ok(v * scale)
    } else {
        Err(format!("the time of day {v} is not within a day"))
    }
}

fn mismatch(source: &DataType, target: &DataType) -> String {
    format!("arrow-avro reads it as {source}, which has no conversion to Spark's {target}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{DictionaryArray, FixedSizeBinaryArray, TimestampMillisecondArray};
    use arrow_schema::{Field, Fields};

    #[test]
    fn enums_fixed_and_timestamps_become_spark_types() {
        let keys = Int32Array::from(vec![Some(1), None, Some(0)]);
        let symbols: ArrayRef = Arc::new(StringArray::from(vec!["A", "B"]));
        let enums: ArrayRef = Arc::new(DictionaryArray::new(keys, symbols));
        let text = conform(&enums, &DataType::Utf8).unwrap();
        assert_eq!(
            text.as_string::<i32>().iter().collect::<Vec<_>>(),
            vec![Some("B"), None, Some("A")]
        );
        let fixed: ArrayRef =
            Arc::new(FixedSizeBinaryArray::try_from_iter([[0u8, 1], [2, 3]].into_iter()).unwrap());
        let binary = conform(&fixed, &DataType::Binary).unwrap();
        assert_eq!(binary.as_binary::<i32>().value(1), &[2, 3]);
        let millis: ArrayRef =
            Arc::new(TimestampMillisecondArray::from(vec![1_500]).with_timezone("+00:00"));
        let spark = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let micros = conform(&millis, &spark).unwrap();
        assert_eq!(micros.data_type(), &spark);
        assert_eq!(
            micros.as_primitive::<TimestampMicrosecondType>().value(0),
            1_500_000
        );
        let far: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![1 << 62]));
        assert_eq!(
            conform(&far, &spark).unwrap_err(),
            "the timestamp 4611686018427387904 is not in the years 1 to 9999"
        );
        let last: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![LAST_MS]));
        assert!(conform(&last, &spark).is_ok());
        let past: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![LAST_MS + 1]));
        assert!(conform(&past, &spark).is_err());
    }

    #[test]
    fn structs_take_spark_nullability_and_unions_become_members() {
        let source = DataType::Struct(Fields::from(vec![Field::new("a", DataType::Int32, true)]));
        let target = DataType::Struct(Fields::from(vec![Field::new("a", DataType::Int32, false)]));
        assert_eq!(check(&source, &target), Ok(()));
        let renamed = DataType::Struct(Fields::from(vec![Field::new("b", DataType::Int32, false)]));
        assert!(check(&source, &renamed).is_err());
        let union = dense_union(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
        ]);
        let members = DataType::Struct(Fields::from(vec![
            Field::new("member0", DataType::Int32, true),
            Field::new("member1", DataType::Utf8, true),
        ]));
        assert_eq!(check(&union, &members), Ok(()));
        let refusal = check(&union, &DataType::Utf8).unwrap_err();
        assert!(
            refusal.contains("no conversion to Spark's Utf8"),
            "{refusal}"
        );
        // A union of null and one type is that type (a writer's third branch resolved away).
        let nullable = dense_union(vec![
            Field::new("null", DataType::Null, true),
            Field::new("string", DataType::Utf8, true),
        ]);
        assert_eq!(check(&nullable, &DataType::Utf8), Ok(()));
    }

    /// A dense union of `fields`, type ids 0, 1, ... in order.
    fn dense_union(fields: Vec<Field>) -> DataType {
        let ids = (0..fields.len())
            .map(|i| i8::try_from(i).unwrap())
            .collect::<Vec<_>>();
        DataType::Union(
            arrow_schema::UnionFields::try_new(ids, fields).unwrap(),
            arrow_schema::UnionMode::Dense,
        )
    }
}
