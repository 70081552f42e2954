//! goaicore's compiled core: goaicore's records read and written as Avro, and the fold
//! of the events that make most of a log, under PyO3.
//!
//! Each part follows a Python definition and answers to it: the writer and the reader
//! follow the generated Python writer and reader (exactly the declared types, else
//! `NotDirect` and the codec's generic path), the fold follows `goaicore.fold.fold`
//! (the events it does not fold as that fold would, it hands back). Property tests
//! hold each to its Python counterpart.

use pyo3::prelude::*;

mod fold;
mod histories;
mod reader;
mod sizes;
mod slots;
mod writer;

#[pymodule]
fn goaicore_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<writer::Writer>()?;
    module.add_class::<reader::Reader>()?;
    module.add_class::<histories::Histories>()?;
    module.add_class::<fold::Folder>()?;
    Ok(())
}
