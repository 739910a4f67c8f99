//! A writer schema as the encoder walks it: each node the Avro encoding of one Spark type, or
//! the reason the core does not encode the schema as the Python encoder does.
//!
//! The schema comes with every named type written out where it is used (the caller inlines
//! references: a schema with a Spark type contains no record inside itself), so nothing here
//! resolves names. Logical types are taken only on the base types Avro defines them for
//! (`date` on `int`, `timestamp-*`, `local-timestamp-*` and `time-micros` on `long`,
//! `time-millis` on `int`, `uuid` on `string`, `decimal` on `bytes` or on a `fixed` large enough);
//! any other logical type, a union without a branch, a union whose branches share a name, and a
//! nanosecond timestamp are refused: the Python encoder writes those.

use serde_json::{Map, Value};

/// How one node of the schema is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    /// Days since the epoch, from Arrow's `date32`.
    Date,
    /// Microseconds since the epoch, written as milliseconds (floor) when `millis`; `local` is
    /// a `local-timestamp-*` (Spark's timestamp without time zone).
    Timestamp {
        millis: bool,
        local: bool,
    },
    /// Microseconds of the day, from Arrow's `time64` (Spark's `time(6)`; the long itself on
    /// PySpark 4.0).
    TimeMicros,
    /// A decimal of `precision` and `scale`: two's complement big-endian, as `bytes` of the
    /// length fastavro writes, or in a `fixed` of `size` bytes.
    Decimal {
        precision: u32,
        scale: i8,
        size: Option<usize>,
    },
    Enum(Vec<String>),
    Fixed(usize),
    Record(Vec<(String, Plan)>),
    Array(Box<Plan>),
    Map(Box<Plan>),
    /// A union of one type, with `null` or without: the branch of the value, else `null`'s.
    Nullable {
        null: Option<usize>,
        value: usize,
        plan: Box<Plan>,
    },
    /// A union of `null` alone (Spark's empty struct): always its `null`.
    OnlyNull(usize),
    /// A union of `int` and `long` (Spark's bigint): the first of them the value fits.
    IntOrLong {
        null: Option<usize>,
        int: usize,
        long: usize,
    },
    /// A union of `float` and `double` (Spark's double): always the `double` (fastavro's choice).
    FloatOrDouble {
        null: Option<usize>,
        double: usize,
    },
    /// Any other union: Spark's struct of `member0`, `member1`, ... (the non-null branches in
    /// order, each with its index in the union); the first member set is written.
    Members {
        null: Option<usize>,
        members: Vec<(usize, Plan)>,
    },
}

impl Plan {
    /// The plan of `schema` (parsed JSON), or why the core does not encode it.
    pub fn of(schema: &Value) -> Result<Plan, String> {
        match schema {
            Value::String(name) => primitive(name),
            Value::Array(branches) => union(branches),
            Value::Object(node) => complex(node),
            other => Err(format!("{other} is not an Avro schema")),
        }
    }
}

fn primitive(name: &str) -> Result<Plan, String> {
    Ok(match name {
        "null" => Plan::Null,
        "boolean" => Plan::Boolean,
        "int" => Plan::Int,
        "long" => Plan::Long,
        "float" => Plan::Float,
        "double" => Plan::Double,
        "bytes" => Plan::Bytes,
        "string" => Plan::String,
        other => {
            return Err(format!(
                "the type {other:?} is not written out where it is used"
            ))
        }
    })
}

fn complex(node: &Map<String, Value>) -> Result<Plan, String> {
    let kind = match node.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(inner @ (Value::Array(_) | Value::Object(_))) if !node.contains_key("logicalType") => {
            return Plan::of(inner)
        }
        _ => {
            return Err(format!(
                "{} has no type the core writes",
                Value::Object(node.clone())
            ))
        }
    };
    let plan = match kind {
        "record" | "error" => {
            let fields = node
                .get("fields")
                .and_then(Value::as_array)
                .ok_or("a record without fields")?;
            let fields = fields
                .iter()
                .map(|f| {
                    let name = f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("a nameless field")?;
                    let plan = Plan::of(f.get("type").ok_or("a field without a type")?)?;
                    Ok((name.to_string(), plan))
                })
                .collect::<Result<_, String>>()?;
            Plan::Record(fields)
        }
        "enum" => {
            let symbols = node.get("symbols").and_then(Value::as_array);
            let symbols = symbols.ok_or("an enum without symbols")?;
            let symbols = symbols
                .iter()
                .map(|s| {
                    s.as_str()
                        .map(str::to_string)
                        .ok_or("an enum symbol that is not text")
                })
                .collect::<Result<_, _>>()?;
            Plan::Enum(symbols)
        }
        "fixed" => {
            let size = node
                .get("size")
                .and_then(Value::as_u64)
                .ok_or("a fixed without size")?;
            Plan::Fixed(usize::try_from(size).map_err(|e| e.to_string())?)
        }
        "array" => Plan::Array(Box::new(Plan::of(node.get("items").ok_or("no items")?)?)),
        "map" => Plan::Map(Box::new(Plan::of(node.get("values").ok_or("no values")?)?)),
        primitive_name => primitive(primitive_name)?,
    };
    match node.get("logicalType") {
        None => Ok(plan),
        Some(logical) => logical_of(node, plan, logical),
    }
}

fn logical_of(node: &Map<String, Value>, plan: Plan, logical: &Value) -> Result<Plan, String> {
    let name = logical.as_str().unwrap_or_default();
    let refused = || {
        Err(format!(
            "the logical type {logical} on {}",
            kind_name(&plan)
        ))
    };
    Ok(match (name, &plan) {
        ("date", Plan::Int) => Plan::Date,
        ("time-millis", Plan::Int) | ("uuid", Plan::String) => plan,
        ("time-micros", Plan::Long) => Plan::TimeMicros,
        (
            "timestamp-millis"
            | "timestamp-micros"
            | "local-timestamp-millis"
            | "local-timestamp-micros",
            Plan::Long,
        ) => Plan::Timestamp {
            millis: name.ends_with("-millis"),
            local: name.starts_with("local-"),
        },
        ("decimal", Plan::Bytes | Plan::Fixed(_)) => {
            let precision = node.get("precision").and_then(Value::as_u64).unwrap_or(0);
            let scale = node.get("scale").map_or(Some(0), Value::as_u64);
            let size = match plan {
                Plan::Fixed(size) => Some(size),
                _ => None,
            };
            // Spark's decimals: precision 1 to 38, scale up to the precision, a fixed that
            // holds the precision.
            let fits =
                size.is_none_or(|size| size >= 16 || (size > 0 && digits_in(size) >= precision));
            match scale {
                Some(scale) if (1..=38).contains(&precision) && scale <= precision && fits => {
                    Plan::Decimal {
                        precision: precision as u32,
                        scale: scale as i8,
                        size,
                    }
                }
                _ => return refused(),
            }
        }
        _ => return refused(),
    })
}

/// The most decimal digits a two's complement number of `size` bytes always holds.
fn digits_in(size: usize) -> u64 {
    let bits = 8 * size as u32 - 1;
    ((2f64.powi(bits as i32) - 1.0).log10().floor()) as u64
}

fn kind_name(plan: &Plan) -> &'static str {
    match plan {
        Plan::Int => "int",
        Plan::Long => "long",
        Plan::Bytes => "bytes",
        Plan::String => "string",
        Plan::Fixed(_) => "fixed",
        Plan::Boolean => "boolean",
        Plan::Float => "float",
        Plan::Double => "double",
        _ => "a complex type",
    }
}

/// The name fastavro picks a union's branch by: a named type's name, else its type.
fn branch_name(branch: &Value) -> String {
    match branch {
        Value::String(name) => name.clone(),
        Value::Object(node) => match node.get("type") {
            Some(Value::String(kind))
                if ["record", "error", "enum", "fixed"].contains(&kind.as_str()) =>
            {
                node.get("name").map(Value::to_string).unwrap_or_default()
            }
            Some(kind) => branch_name(kind),
            None => String::new(),
        },
        _ => "union".to_string(),
    }
}

fn union(branches: &[Value]) -> Result<Plan, String> {
    let mut names: Vec<String> = branches.iter().map(branch_name).collect();
    names.sort();
    if names.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err("a union of branches of one name".to_string());
    }
    let plans = branches
        .iter()
        .map(Plan::of)
        .collect::<Result<Vec<_>, _>>()?;
    let null = plans.iter().position(|p| *p == Plan::Null);
    let rest: Vec<(usize, Plan)> = plans
        .into_iter()
        .enumerate()
        .filter(|(_, p)| *p != Plan::Null)
        .collect();
    let index = |wanted: &Plan| rest.iter().find(|(_, p)| p == wanted).map(|(i, _)| *i);
    Ok(match rest.len() {
        0 => Plan::OnlyNull(null.ok_or("a union without a branch")?),
        1 => {
            let (value, plan) = rest.into_iter().next().expect("one branch");
            Plan::Nullable {
                null,
                value,
                plan: Box::new(plan),
            }
        }
        2 if index(&Plan::Int).is_some() && index(&Plan::Long).is_some() => Plan::IntOrLong {
            null,
            int: index(&Plan::Int).expect("int"),
            long: index(&Plan::Long).expect("long"),
        },
        2 if index(&Plan::Float).is_some() && index(&Plan::Double).is_some() => {
            Plan::FloatOrDouble {
                null,
                double: index(&Plan::Double).expect("double"),
            }
        }
        _ => Plan::Members {
            null,
            members: rest,
        },
    })
}
