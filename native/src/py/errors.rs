//! The exceptions the core raises to Python.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;

use crate::read::ReadFailure;

create_exception!(
    _core,
    DataLossError,
    PyException,
    "Records of a range are gone."
);
create_exception!(_core, ReadError, PyException, "Reading a cluster failed.");
create_exception!(
    _core,
    ClientError,
    PyException,
    "librdkafka refused the client configuration."
);

/// A read's failure as the exception Python sees.
pub fn raise(failure: ReadFailure) -> PyErr {
    match failure {
        ReadFailure::DataLoss(text) => DataLossError::new_err(text),
        ReadFailure::Read(text) => ReadError::new_err(text),
    }
}

create_exception!(
    _core,
    WriteFailure,
    PyException,
    "Producing failed: args are (topic or None, librdkafka's reason)."
);
