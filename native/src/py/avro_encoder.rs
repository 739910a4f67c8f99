//! `AvroEncoder`: a pyarrow column of a writer schema's Spark type into Confluent-framed Avro
//! payloads ([`crate::encode`]); the registry's I/O stays with the caller.

use arrow_array::{make_array, Array};
use arrow_data::ArrayData;
use arrow_pyarrow::{PyArrowType, ToPyArrow};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::encode;

/// Encodes columns of one writer schema (Avro JSON, every named type written out where it is
/// used). Raises ValueError, saying why, for a schema the core does not encode as the Python
/// encoder does: the Python encoder writes then.
#[pyclass(module = "pyspark_dynamic_kafka_core._core", frozen)]
pub struct AvroEncoder {
    inner: encode::AvroEncoder,
}

#[pymethods]
impl AvroEncoder {
    #[new]
    fn new(schema: &str) -> PyResult<Self> {
        let inner = encode::AvroEncoder::new(schema).map_err(PyValueError::new_err)?;
        Ok(AvroEncoder { inner })
    }

    /// The payloads of `values` framed with `schema_id` (a pyarrow binary array, null where a
    /// value is null), or the first row (an int) whose value the core leaves to the Python
    /// encoder. Raises ValueError for a column whose type the core does not write.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        values: PyArrowType<ArrayData>,
        schema_id: u32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let values = make_array(values.0);
        let encoded = py
            .detach(|| self.inner.encode(&values, schema_id))
            .map_err(PyValueError::new_err)?;
        match encoded {
            Ok(payloads) => payloads.to_data().to_pyarrow(py),
            Err(row) => Ok(row.into_pyobject(py)?.into_any()),
        }
    }
}
