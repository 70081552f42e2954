//! Avro bytes written straight from goaicore's records.
//!
//! The Python side (`goaicore.records.avro.native`) compiles, once per record type, a
//! plan from the current schema and the record's dataclass: nested tuples naming each
//! value's kind, in schema order. A `Writer` turns the plan into a tree once and then
//! writes records by walking it, taking only values of exactly the types the record
//! declares, as the generated Python writer does; anything else raises the exception
//! class it was given (`NotDirect`), so the codec's generic path writes the record or
//! names what is wrong. Both writers are held to the same bytes by property tests.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDateAccess, PyDateTime, PyDelta, PyDeltaAccess, PyDict, PyInt, PyList,
    PyString, PyTimeAccess, PyTuple, PyType,
};
use pyo3::PyTypeInfo;
use pyo3::{PyTraverseError, PyVisit};

use crate::histories::Histories;
use crate::slots::SlotType;

/// How one value of the schema is written.
pub(crate) enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Str,
    Bytes,
    Timestamp,
    /// `["null", T]`: None, else T.
    Nullable(Box<Node>),
    /// A union of records, told apart by their exact Python type.
    Union(Vec<(Py<PyType>, Node)>),
    /// A dataclass's fields in schema order, and the slots of its value fields (in the
    /// order of those fields) where it keeps them in slots.
    Record(Py<PyType>, Vec<Field>, Option<SlotType>),
    /// The enum's type, and its members' indexes in the schema's symbols.
    Enum(Py<PyType>, Py<PyDict>),
    Array(Box<Node>),
    Map(Box<Node>),
}

pub(crate) enum Field {
    /// An attribute of the record, written by its node.
    Value(Py<PyString>, Node),
    /// A field written by a Python function of the record: `write(record, out)` appends
    /// the field's whole encoding to the list `out`.
    Override(PyObject),
    /// A snapshot's `messages`, written from the history cache (`Histories`): the
    /// items encoded before are copied, only the new ones written.
    History(Py<Histories>),
}

/// Why a value was not written: not one the writer takes, or Python's own error.
pub(crate) enum Fail {
    NotDirect(&'static str),
    Python(PyErr),
}

impl From<PyErr> for Fail {
    fn from(err: PyErr) -> Self {
        Fail::Python(err)
    }
}

pub(crate) type Written = Result<(), Fail>;

fn text<'py>(value: &Bound<'py, PyAny>) -> PyResult<String> {
    value.extract::<String>()
}

pub(crate) fn node(plan: &Bound<'_, PyAny>) -> PyResult<Node> {
    let plan = plan.downcast::<PyTuple>()?;
    let kind = text(&plan.get_item(0)?)?;
    Ok(match kind.as_str() {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "int" => Node::Int,
        "long" => Node::Long,
        "string" => Node::Str,
        "bytes" => Node::Bytes,
        "timestamp" => Node::Timestamp,
        "nullable" => Node::Nullable(Box::new(node(&plan.get_item(1)?)?)),
        "array" => Node::Array(Box::new(node(&plan.get_item(1)?)?)),
        "map" => Node::Map(Box::new(node(&plan.get_item(1)?)?)),
        "union" => {
            let mut branches = Vec::new();
            for branch in plan.get_item(1)?.downcast::<PyTuple>()?.iter() {
                let branch = branch.downcast::<PyTuple>()?;
                let record_type = branch.get_item(0)?.downcast::<PyType>()?.clone().unbind();
                branches.push((record_type, node(&branch.get_item(1)?)?));
            }
            Node::Union(branches)
        }
        "record" => {
            let record_type = plan.get_item(1)?.downcast::<PyType>()?.clone().unbind();
            let mut fields = Vec::new();
            let mut names: Vec<String> = Vec::new();
            for field in plan.get_item(2)?.downcast::<PyTuple>()?.iter() {
                let field = field.downcast::<PyTuple>()?;
                let how = text(&field.get_item(0)?)?;
                if how == "override" {
                    fields.push(Field::Override(field.get_item(1)?.unbind()));
                } else if how == "history" {
                    let histories = field.get_item(1)?.downcast::<Histories>()?.clone().unbind();
                    fields.push(Field::History(histories));
                } else {
                    let named = text(&field.get_item(1)?)?;
                    let name = PyString::intern(plan.py(), &named).unbind();
                    fields.push(Field::Value(name, node(&field.get_item(2)?)?));
                    names.push(named);
                }
            }
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let slots = SlotType::named(record_type.bind(plan.py()), &refs)?;
            Node::Record(record_type, fields, slots)
        }
        "enum" => {
            let enum_type = plan.get_item(1)?.downcast::<PyType>()?.clone().unbind();
            let indexes = plan.get_item(2)?.downcast::<PyDict>()?.clone().unbind();
            Node::Enum(enum_type, indexes)
        }
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "no native writer for {other:?}"
            )))
        }
    })
}

/// Avro's zigzag varint of a long.
pub(crate) fn varint(value: i64, out: &mut Vec<u8>) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag & !0x7F != 0 {
        out.push(((zigzag & 0x7F) | 0x80) as u8);
        zigzag >>= 7;
    }
    out.push(zigzag as u8);
}

pub(crate) fn length(len: usize, out: &mut Vec<u8>) {
    varint(len as i64, out);
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// A timestamp's milliseconds since the epoch, as `(value - EPOCH) // 1 ms` gives them;
/// aware datetimes only.
fn millis(value: &Bound<'_, PyAny>) -> Result<i64, Fail> {
    let py = value.py();
    if !value.get_type().is(PyDateTime::type_object(py)) {
        return Err(Fail::NotDirect("not an aware datetime"));
    }
    let offset = value.call_method0("utcoffset")?;
    if offset.is_none() {
        return Err(Fail::NotDirect("not an aware datetime"));
    }
    let stamp = value.downcast::<PyDateTime>().map_err(PyErr::from)?;
    let offset = offset.downcast::<PyDelta>().map_err(PyErr::from)?;
    let days = days_from_civil(
        stamp.get_year() as i64,
        stamp.get_month() as i64,
        stamp.get_day() as i64,
    );
    let seconds = days * 86_400
        + stamp.get_hour() as i64 * 3_600
        + stamp.get_minute() as i64 * 60
        + stamp.get_second() as i64;
    let local = seconds * 1_000_000 + stamp.get_microsecond() as i64;
    let shift = (offset.get_days() as i64 * 86_400 + offset.get_seconds() as i64) * 1_000_000
        + offset.get_microseconds() as i64;
    Ok((local - shift).div_euclid(1_000))
}

fn integer(value: &Bound<'_, PyAny>, low: i64, high: i64) -> Result<i64, Fail> {
    if !value.is_exact_instance_of::<PyInt>() {
        return Err(Fail::NotDirect("not an int in range"));
    }
    match value.extract::<i64>() {
        Ok(number) if (low..=high).contains(&number) => Ok(number),
        _ => Err(Fail::NotDirect("not an int in range")),
    }
}

fn string(value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> Written {
    let value = value
        .downcast_exact::<PyString>()
        .map_err(|_| Fail::NotDirect("not a str"))?;
    // A lone surrogate cannot be UTF-8: the codec's generic path names it.
    let utf8 = value
        .to_str()
        .map_err(|_| Fail::NotDirect("not encodable as UTF-8"))?;
    length(utf8.len(), out);
    out.extend_from_slice(utf8.as_bytes());
    Ok(())
}

pub(crate) fn write(node: &Node, value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> Written {
    let py = value.py();
    match node {
        Node::Null => {
            if !value.is_none() {
                return Err(Fail::NotDirect("not null"));
            }
        }
        Node::Boolean => {
            let flag = value
                .downcast_exact::<PyBool>()
                .map_err(|_| Fail::NotDirect("not a bool"))?;
            out.push(u8::from(flag.is_true()));
        }
        Node::Int => varint(integer(value, i32::MIN as i64, i32::MAX as i64)?, out),
        Node::Long => varint(integer(value, i64::MIN, i64::MAX)?, out),
        Node::Str => string(value, out)?,
        Node::Bytes => {
            let data = value
                .downcast_exact::<PyBytes>()
                .map_err(|_| Fail::NotDirect("not bytes"))?
                .as_bytes();
            length(data.len(), out);
            out.extend_from_slice(data);
        }
        Node::Timestamp => varint(millis(value)?, out),
        Node::Nullable(inner) => {
            if value.is_none() {
                out.push(0);
            } else {
                out.push(2);
                write(inner, value, out)?;
            }
        }
        Node::Union(branches) => {
            let kind = value.get_type();
            let Some(index) = branches.iter().position(|(t, _)| kind.is(t.bind(py))) else {
                return Err(Fail::NotDirect("not a branch of the union"));
            };
            length(index, out);
            write(&branches[index].1, value, out)?;
        }
        Node::Record(record_type, fields, slots) => {
            if !value.get_type().is(record_type.bind(py)) {
                return Err(Fail::NotDirect("not the record type"));
            }
            let mut slot = 0;
            for field in fields {
                match field {
                    Field::Value(name, inner) => {
                        // Exactly the record type: its slots are where the plan found them.
                        let found = match slots {
                            Some(slots) => slots.get(value, slot),
                            None => None,
                        };
                        slot += 1;
                        match found {
                            Some(field_value) => write(inner, &field_value, out)?,
                            None => write(inner, &value.getattr(name.bind(py))?, out)?,
                        }
                    }
                    Field::History(histories) => histories.get().write_messages(value, out)?,
                    Field::Override(function) => {
                        let parts = PyList::empty(py);
                        function.bind(py).call1((value, &parts))?;
                        for part in parts.iter() {
                            out.extend_from_slice(
                                part.downcast::<PyBytes>().map_err(PyErr::from)?.as_bytes(),
                            );
                        }
                    }
                }
            }
        }
        Node::Enum(enum_type, indexes) => {
            if !value.get_type().is(enum_type.bind(py)) {
                return Err(Fail::NotDirect("not the enum"));
            }
            let Some(index) = indexes.bind(py).get_item(value)? else {
                return Err(Fail::NotDirect("not a symbol of the schema"));
            };
            varint(index.extract::<i64>()?, out);
        }
        Node::Array(items) => {
            let tuple = value
                .downcast_exact::<PyTuple>()
                .map_err(|_| Fail::NotDirect("not a tuple"))?;
            if !tuple.is_empty() {
                length(tuple.len(), out);
                for item in tuple.iter() {
                    write(items, &item, out)?;
                }
            }
            out.push(0);
        }
        Node::Map(values) => {
            let dict = value
                .downcast_exact::<PyDict>()
                .map_err(|_| Fail::NotDirect("not a dict"))?;
            if !dict.is_empty() {
                // Its items first, as a list: a dict changed meanwhile (by Python code a
                // write runs, on another thread) is not iterated over.
                let items = dict.items();
                length(items.len(), out);
                for pair in items.iter() {
                    let (key, item) = pair.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()?;
                    string(&key, out)?;
                    write(values, &item, out)?;
                }
            }
            out.push(0);
        }
    }
    Ok(())
}

/// A record type's writer: `writer(record, out)` appends the record's Avro body to the
/// list `out` as one bytes object, or raises the `not_direct` class it was made with.
#[pyclass(frozen, module = "goaicore_native")]
pub struct Writer {
    root: Node,
    not_direct: Py<PyType>,
}

/// Every Python object a plan holds, for the cycle collector (a record type's writer
/// may hold a function whose owner holds the writer).
pub(crate) fn visit_node(node: &Node, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    match node {
        Node::Nullable(inner) | Node::Array(inner) | Node::Map(inner) => visit_node(inner, visit),
        Node::Union(branches) => {
            for (record_type, inner) in branches {
                visit.call(record_type)?;
                visit_node(inner, visit)?;
            }
            Ok(())
        }
        Node::Record(record_type, fields, _) => {
            visit.call(record_type)?;
            for field in fields {
                match field {
                    Field::Value(name, inner) => {
                        visit.call(name)?;
                        visit_node(inner, visit)?;
                    }
                    Field::Override(function) => visit.call(function)?,
                    Field::History(histories) => visit.call(histories)?,
                }
            }
            Ok(())
        }
        Node::Enum(enum_type, indexes) => {
            visit.call(enum_type)?;
            visit.call(indexes)
        }
        _ => Ok(()),
    }
}

#[pymethods]
impl Writer {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.not_direct)?;
        visit_node(&self.root, &visit)
    }

    #[new]
    fn new(plan: &Bound<'_, PyAny>, not_direct: &Bound<'_, PyType>) -> PyResult<Self> {
        Ok(Writer {
            root: node(plan)?,
            not_direct: not_direct.clone().unbind(),
        })
    }

    fn __call__(&self, record: &Bound<'_, PyAny>, out: &Bound<'_, PyList>) -> PyResult<()> {
        let mut buffer = Vec::with_capacity(256);
        self.written(record, &mut buffer)?;
        out.append(PyBytes::new(record.py(), &buffer))
    }

    /// `head` then the record's Avro body, as one bytes object (a single-object
    /// encoding: its header, then the body), or the writer's refusal.
    fn with_header<'py>(
        &self,
        record: &Bound<'py, PyAny>,
        head: &Bound<'py, PyBytes>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut buffer = Vec::with_capacity(512);
        buffer.extend_from_slice(head.as_bytes());
        self.written(record, &mut buffer)?;
        Ok(PyBytes::new(record.py(), &buffer))
    }
}

impl Writer {
    fn written(&self, record: &Bound<'_, PyAny>, buffer: &mut Vec<u8>) -> PyResult<()> {
        // A panic (a bug here) is a refusal: the codec's generic path writes the record.
        let written = catch_unwind(AssertUnwindSafe(|| write(&self.root, record, buffer)))
            .unwrap_or(Err(Fail::NotDirect("the compiled writer failed")));
        match written {
            Ok(()) => Ok(()),
            Err(Fail::Python(err)) => Err(err),
            Err(Fail::NotDirect(why)) => Err(PyErr::from_type(
                self.not_direct.bind(record.py()).clone(),
                why,
            )),
        }
    }
}
