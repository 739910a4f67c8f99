//! `AvroDecoder`: Avro keys or values into a pyarrow array of the reader schema's Spark type
//! ([`crate::avro`]); the registry's I/O stays with the caller. A [`super::reader::Reader`]
//! given decoders decodes each batch it reads with them before the batch reaches Python.

use std::sync::Mutex;

use arrow_array::{make_array, Array, ArrayRef};
use arrow_data::ArrayData;
use arrow_pyarrow::{PyArrowType, ToPyArrow};
use arrow_schema::DataType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::relock;
use crate::avro::{self, SchemaRef};

/// A schema as Python names it: a Confluent id (int) or a GUID (canonical text).
#[derive(FromPyObject)]
enum Named {
    Id(u32),
    Guid(String),
}

impl Named {
    fn parse(self) -> PyResult<SchemaRef> {
        match self {
            Named::Id(id) => Ok(SchemaRef::Id(id)),
            Named::Guid(text) => SchemaRef::parse_guid(&text)
                .map(SchemaRef::Guid)
                .ok_or_else(|| PyValueError::new_err(format!("{text:?} is not a schema GUID"))),
        }
    }
}

fn named(py: Python<'_>, schema: SchemaRef) -> PyResult<Bound<'_, PyAny>> {
    Ok(match schema {
        SchemaRef::Id(id) => id.into_pyobject(py)?.into_any(),
        SchemaRef::Guid(guid) => SchemaRef::guid_text(&guid).into_pyobject(py)?.into_any(),
    })
}

fn array(data: PyArrowType<ArrayData>) -> ArrayRef {
    make_array(data.0)
}

/// Decodes one cluster's Avro keys or values (Confluent's wire formats) into a pyarrow array.
///
/// Parameters: the reader schema (Avro JSON), whether keys are decoded (their schema header is
/// `__key_schema_id`), and the pyarrow type to give (Spark's type of the reader schema). Raises
/// ValueError, saying which type, when it cannot give that type: the Python decoder reads then.
/// Frozen: a `Reader` reaches it without the GIL, through its lock.
#[pyclass(module = "pyspark_dynamic_kafka_core._core", frozen)]
pub struct AvroDecoder {
    inner: Mutex<avro::AvroDecoder>,
}

type Failures<'py> = Vec<(usize, Option<Bound<'py, PyAny>>, String)>;

/// What [`AvroDecoder::decode_or_missing`] says of a batch: decoded, or the schemas it lacks.
pub type Asked = Result<avro::Decoded, Vec<SchemaRef>>;

impl AvroDecoder {
    /// A column decoded (the GIL need not be held): `decode(values, headers, ask=True)`'s
    /// work, before it is made Python's ([`asked_to_python`]).
    pub fn decode_or_missing(
        &self,
        values: &ArrayRef,
        headers: Option<&ArrayRef>,
    ) -> Result<Asked, String> {
        relock(&self.inner).decode_or_missing(values, headers)
    }
}

/// `decode`'s answer in Python: a list of the missing schemas (ids as int, GUIDs as text), or
/// (values, schema ids, failures as (row, schema or None, reason)).
pub fn asked_to_python(py: Python<'_>, asked: Asked) -> PyResult<Bound<'_, PyAny>> {
    let decoded = match asked {
        Ok(decoded) => decoded,
        Err(missing) => {
            let named = missing
                .into_iter()
                .map(|schema| named(py, schema))
                .collect::<PyResult<Vec<_>>>()?;
            return Ok(PyList::new(py, named)?.into_any());
        }
    };
    let failures: Failures<'_> = decoded
        .failures
        .into_iter()
        .map(|f| {
            let schema = f.schema.map(|s| named(py, s)).transpose()?;
            Ok((f.row, schema, f.reason))
        })
        .collect::<PyResult<_>>()?;
    let values = decoded.values.to_data().to_pyarrow(py)?;
    let ids = decoded.schema_ids.to_data().to_pyarrow(py)?;
    Ok((values, ids, failures).into_pyobject(py)?.into_any())
}

#[pymethods]
impl AvroDecoder {
    #[new]
    fn new(reader_schema: &str, key: bool, arrow_type: PyArrowType<DataType>) -> PyResult<Self> {
        let inner = avro::AvroDecoder::new(reader_schema, key, arrow_type.0)
            .map_err(PyValueError::new_err)?;
        Ok(AvroDecoder {
            inner: Mutex::new(inner),
        })
    }

    /// The writer schema (Avro JSON) records naming `schema_ref` were written with. Raises
    /// ValueError, saying why, for a writer schema the core does not decode: the Python decoder
    /// reads then.
    fn add_writer(&self, schema_ref: Named, writer_schema: &str) -> PyResult<()> {
        relock(&self.inner)
            .add_writer(schema_ref.parse()?, writer_schema)
            .map_err(PyValueError::new_err)
    }

    /// Records naming `schema_ref` fail with `reason` in the next `decode` only.
    fn refuse(&self, schema_ref: Named, reason: String) -> PyResult<()> {
        relock(&self.inner).refuse(schema_ref.parse()?, reason);
        Ok(())
    }

    /// The batch decoded: (values, schema ids as int32, failures as (row, schema or None,
    /// reason) in row order); a failed record's value and id are null. With `ask`, when records
    /// name schemas no writer schema was added or refused for: those instead (ids as int, GUIDs
    /// as text, each once, nothing decoded); without, such records fail.
    #[pyo3(signature = (values, headers=None, ask=false))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        values: PyArrowType<ArrayData>,
        headers: Option<PyArrowType<ArrayData>>,
        ask: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (values, headers) = (array(values), headers.map(array));
        let decoded = py
            .detach(|| {
                if ask {
                    self.decode_or_missing(&values, headers.as_ref())
                } else {
                    relock(&self.inner)
                        .decode(&values, headers.as_ref())
                        .map(Ok)
                }
            })
            .map_err(PyValueError::new_err)?;
        asked_to_python(py, decoded)
    }
}
