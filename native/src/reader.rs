//! Records read straight from Avro bytes written with the current schema, by plan.
//!
//! The Python side compiles, once per record type, a plan from the current schema and
//! the record's dataclass (`goaicore.records.avro.native`), with the generated Python
//! reader's rules (`direct_reader`): a `Reader` walks it over the bytes and fills each
//! record's slots, as the generated reader does, with sequences as tuples and maps as
//! dicts. Anything it does not take exactly as the schema says (an index out of range,
//! a boolean neither 0 nor 1, a length past the end, bad UTF-8, a varint of more than
//! 63 bits, a time outside the years 1 to 9999) raises the `NotDirect` class it was
//! given, and the codec reads the payload with fastavro, whose result or error stands.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDateTime, PyDict, PyString, PyTuple, PyType, PyTzInfo};
use pyo3::{PyTraverseError, PyVisit};

use crate::slots::SlotType;

/// How one value of the schema is read.
enum Read {
    Null,
    Boolean,
    Long,
    Str,
    Bytes,
    Timestamp,
    Array(Box<Read>),
    Map(Box<Read>),
    /// The branches, by index.
    Union(Vec<Read>),
    /// The record's type, and for each field in schema order the slot it fills (None:
    /// read and dropped, a field the dataclass lacks).
    Record(SlotType, Vec<(Option<usize>, Read)>),
    /// Each symbol's value, by index.
    Enum(Vec<PyObject>),
}

fn text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    value.extract::<String>()
}

fn plan(plan: &Bound<'_, PyAny>) -> PyResult<Read> {
    let plan = plan.downcast::<PyTuple>()?;
    let kind = text(&plan.get_item(0)?)?;
    Ok(match kind.as_str() {
        "null" => Read::Null,
        "boolean" => Read::Boolean,
        "int" | "long" => Read::Long,
        "string" => Read::Str,
        "bytes" => Read::Bytes,
        "timestamp" => Read::Timestamp,
        "array" => Read::Array(Box::new(self::plan(&plan.get_item(1)?)?)),
        "map" => Read::Map(Box::new(self::plan(&plan.get_item(1)?)?)),
        "union" => {
            let branches = plan.get_item(1)?;
            let branches = branches.downcast::<PyTuple>()?;
            Read::Union(
                branches
                    .iter()
                    .map(|b| self::plan(&b))
                    .collect::<PyResult<_>>()?,
            )
        }
        "record" => {
            let record_type = plan.get_item(1)?;
            let record_type = record_type.downcast::<PyType>()?;
            let names: Vec<String> = plan.get_item(2)?.extract()?;
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let slots = SlotType::new(record_type, &refs)?;
            let mut fields = Vec::new();
            for field in plan.get_item(3)?.downcast::<PyTuple>()?.iter() {
                let field = field.downcast::<PyTuple>()?;
                let name: Option<String> = field.get_item(0)?.extract()?;
                let slot = match name {
                    Some(name) => Some(names.iter().position(|n| *n == name).ok_or_else(|| {
                        pyo3::exceptions::PyValueError::new_err(format!("no slot {name:?}"))
                    })?),
                    None => None,
                };
                fields.push((slot, self::plan(&field.get_item(1)?)?));
            }
            let mut filled = vec![false; slots.len()];
            for (slot, _) in &fields {
                if let Some(index) = slot {
                    filled[*index] = true;
                }
            }
            if filled.contains(&false) {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "a record plan that leaves a slot unread",
                ));
            }
            Read::Record(slots, fields)
        }
        "enum" => {
            let values = plan.get_item(1)?;
            Read::Enum(
                values
                    .downcast::<PyTuple>()?
                    .iter()
                    .map(|v| v.unbind())
                    .collect(),
            )
        }
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "no native reader for {other:?}"
            )))
        }
    })
}

/// Why a payload was not read: not as the schema says, or Python's own error.
enum Fail {
    NotDirect(&'static str),
    Python(PyErr),
}

impl From<PyErr> for Fail {
    fn from(err: PyErr) -> Self {
        Fail::Python(err)
    }
}

type Got<T> = Result<T, Fail>;

// Nine bytes hold 63 bits; a longer (rare, or damaged) varint is fastavro's to read.
const MAX_VARINT_BYTES: usize = 9;

struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    #[inline]
    fn long(&mut self) -> Got<i64> {
        let end = (self.at + MAX_VARINT_BYTES).min(self.data.len());
        let mut value: u64 = 0;
        let mut shift = 0;
        while self.at < end {
            let byte = self.data[self.at];
            self.at += 1;
            value |= u64::from(byte & 0x7F) << shift;
            if byte < 0x80 {
                return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
            shift += 7;
        }
        Err(Fail::NotDirect(
            "a varint past the end or of more than 63 bits",
        ))
    }

    #[inline]
    fn span(&mut self, what: &'static str) -> Got<&[u8]> {
        let size = self.long()?;
        if size < 0 || size as u64 > (self.data.len() - self.at) as u64 {
            return Err(Fail::NotDirect(what));
        }
        let start = self.at;
        self.at += size as usize;
        Ok(&self.data[start..self.at])
    }

    /// The item count of the next block of an array or map (0: the end).
    fn block(&mut self) -> Got<usize> {
        let mut count = self.long()?;
        if count < 0 {
            count = count
                .checked_neg()
                .ok_or(Fail::NotDirect("a block count out of range"))?;
            self.long()?; // the block's size in bytes
        }
        if count as u64 > (self.data.len() - self.at) as u64 {
            return Err(Fail::NotDirect("more items than bytes"));
        }
        Ok(count as usize)
    }
}

/// Days since 1970-01-01 as a proleptic Gregorian (year, month, day).
fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u8;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u8;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// fastavro's timestamp-millis: the epoch plus `millis` milliseconds, in UTC.
fn timestamp<'py>(py: Python<'py>, millis: i64) -> Got<Bound<'py, PyAny>> {
    let seconds = millis.div_euclid(1000);
    let rest = millis.rem_euclid(1000);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    if !(1..=9999).contains(&year) {
        return Err(Fail::NotDirect("a time out of range"));
    }
    let of_day = seconds.rem_euclid(86_400);
    let utc = PyTzInfo::utc(py)?;
    let stamp = PyDateTime::new(
        py,
        year as i32,
        month,
        day,
        (of_day / 3600) as u8,
        (of_day / 60 % 60) as u8,
        (of_day % 60) as u8,
        (rest * 1000) as u32,
        Some(&utc),
    )?;
    Ok(stamp.into_any())
}

fn read<'py>(py: Python<'py>, how: &Read, b: &mut Bytes<'_>) -> Got<Bound<'py, PyAny>> {
    Ok(match how {
        Read::Null => py.None().into_bound(py),
        Read::Boolean => {
            let Some(&byte) = b.data.get(b.at) else {
                return Err(Fail::NotDirect("a boolean past the end"));
            };
            b.at += 1;
            if byte > 1 {
                return Err(Fail::NotDirect("a boolean neither 0 nor 1"));
            }
            PyBool::new(py, byte == 1).to_owned().into_any()
        }
        Read::Long => b.long()?.into_pyobject(py).expect("an int").into_any(),
        Read::Str => {
            let span = b.span("a string past the end")?;
            let text = std::str::from_utf8(span).map_err(|_| Fail::NotDirect("not UTF-8"))?;
            PyString::new(py, text).into_any()
        }
        Read::Bytes => PyBytes::new(py, b.span("a bytes past the end")?).into_any(),
        Read::Timestamp => timestamp(py, b.long()?)?,
        Read::Array(items) => {
            let mut found = Vec::new();
            loop {
                let count = b.block()?;
                if count == 0 {
                    break;
                }
                for _ in 0..count {
                    found.push(read(py, items, b)?);
                }
            }
            PyTuple::new(py, found)?.into_any()
        }
        Read::Map(values) => {
            let map = PyDict::new(py);
            loop {
                let count = b.block()?;
                if count == 0 {
                    break;
                }
                for _ in 0..count {
                    let key = read(py, &Read::Str, b)?;
                    map.set_item(key, read(py, values, b)?)?;
                }
            }
            map.into_any()
        }
        Read::Union(branches) => {
            let index = b.long()?;
            let branch = usize::try_from(index)
                .ok()
                .and_then(|i| branches.get(i))
                .ok_or(Fail::NotDirect("a union index out of range"))?;
            read(py, branch, b)?
        }
        Read::Record(slots, fields) => {
            let mut values: Vec<Option<Bound<'py, PyAny>>> = vec![None; slots.len()];
            for (slot, field) in fields {
                let value = read(py, field, b)?;
                if let Some(index) = slot {
                    values[*index] = Some(value);
                }
            }
            // Every slot is read (the plan is checked for it when made).
            slots.make(
                py,
                values
                    .into_iter()
                    .map(|v| v.expect("a slot read"))
                    .collect(),
            )?
        }
        Read::Enum(symbols) => {
            let index = b.long()?;
            usize::try_from(index)
                .ok()
                .and_then(|i| symbols.get(i))
                .ok_or(Fail::NotDirect("an enum index out of range"))?
                .bind(py)
                .clone()
        }
    })
}

fn visit_read(how: &Read, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    match how {
        Read::Array(inner) | Read::Map(inner) => visit_read(inner, visit),
        Read::Union(branches) => branches.iter().try_for_each(|b| visit_read(b, visit)),
        Read::Record(slots, fields) => {
            visit.call(&slots.ty)?;
            fields.iter().try_for_each(|(_, f)| visit_read(f, visit))
        }
        Read::Enum(symbols) => symbols.iter().try_for_each(|s| visit.call(s)),
        _ => Ok(()),
    }
}

/// A record type's reader: `reader(data, position)` is `(record, end)`, the record read
/// from `data` at `position` and where it ended; else it raises `not_direct`.
#[pyclass(frozen, module = "goaicore_native")]
pub struct Reader {
    root: Read,
    not_direct: Py<PyType>,
}

#[pymethods]
impl Reader {
    #[new]
    fn new(plan: &Bound<'_, PyAny>, not_direct: &Bound<'_, PyType>) -> PyResult<Self> {
        Ok(Reader {
            root: self::plan(plan)?,
            not_direct: not_direct.clone().unbind(),
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.not_direct)?;
        visit_read(&self.root, &visit)
    }

    fn __call__<'py>(
        &self,
        data: &Bound<'py, PyBytes>,
        position: usize,
    ) -> PyResult<(Bound<'py, PyAny>, usize)> {
        let py = data.py();
        let bytes = data.as_bytes();
        if position > bytes.len() {
            return Err(PyErr::from_type(
                self.not_direct.bind(py).clone(),
                "past the end",
            ));
        }
        let mut b = Bytes {
            data: bytes,
            at: position,
        };
        // A panic (a bug here) is a refusal: fastavro reads the payload.
        let read = catch_unwind(AssertUnwindSafe(|| read(py, &self.root, &mut b)))
            .unwrap_or(Err(Fail::NotDirect("the compiled reader failed")));
        match read {
            Ok(record) => Ok((record, b.at)),
            Err(Fail::Python(err)) => Err(err),
            Err(Fail::NotDirect(why)) => {
                Err(PyErr::from_type(self.not_direct.bind(py).clone(), why))
            }
        }
    }
}
