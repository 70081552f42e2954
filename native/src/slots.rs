//! The slots of goaicore's records (frozen, slotted dataclasses), read and filled in place.
//!
//! A slotted dataclass keeps each field in a slot at a fixed offset of the object,
//! described by a member descriptor on its class. Reading a field through
//! `getattr` looks that descriptor up by name on every call; copying a snapshot with
//! a few fields changed (what the fold does on every event) through `__init__` or the
//! descriptors' `__set__` costs microseconds. Here each record type's offsets are read
//! once from its descriptors, and objects of exactly that type are read, made and
//! copied by offset, as the descriptors themselves do. Only objects whose type is
//! exactly the record type are touched this way; anything else is the caller's to
//! refuse.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};

/// A record type: its fields in dataclass order, each with its slot's offset.
pub struct SlotType {
    pub ty: Py<PyType>,
    offsets: Vec<isize>,
}

impl SlotType {
    /// The slots of `ty`, whose dataclass fields must be exactly `expected`, in order
    /// (the native code names fields by their index in that list).
    pub fn new(ty: &Bound<'_, PyType>, expected: &[&str]) -> PyResult<Self> {
        let py = ty.py();
        let dataclasses = py.import("dataclasses")?;
        let fields = dataclasses.call_method1("fields", (ty,))?;
        let names: Vec<String> = fields
            .try_iter()?
            .map(|field| field?.getattr("name")?.extract::<String>())
            .collect::<PyResult<_>>()?;
        if names != expected {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{} has the fields {names:?}; the compiled core knows {expected:?}",
                ty.name()?
            )));
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        Self::named(ty, &refs)?.ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "{} keeps its fields in no writable object slots",
                ty.name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })
    }

    /// The slots of the fields `names` of `ty`, in that order; None when one of them is
    /// not kept in a writable object slot (not a slotted dataclass's field).
    pub fn named(ty: &Bound<'_, PyType>, names: &[&str]) -> PyResult<Option<Self>> {
        let py = ty.py();
        let member_type = py.import("types")?.getattr("MemberDescriptorType")?;
        let mut offsets = Vec::with_capacity(names.len());
        for name in names {
            let Ok(descriptor) = ty.getattr(PyString::new(py, name)) else {
                return Ok(None);
            };
            if !descriptor.get_type().is(&member_type) {
                return Ok(None);
            }
            // SAFETY: a member descriptor is a PyMemberDescrObject, whose d_member points
            // at its class's PyMemberDef (pyo3-ffi types the pointer as a PyGetSetDef).
            let member = unsafe {
                let descr = descriptor.as_ptr() as *mut ffi::PyMemberDescrObject;
                &*((*descr).d_member as *const ffi::PyMemberDef)
            };
            if member.type_code != ffi::Py_T_OBJECT_EX || member.flags & ffi::Py_READONLY != 0 {
                return Ok(None);
            }
            offsets.push(member.offset);
        }
        Ok(Some(SlotType {
            ty: ty.clone().unbind(),
            offsets,
        }))
    }

    /// Whether `value` is exactly of this record type.
    #[inline]
    pub fn is(&self, value: &Bound<'_, PyAny>) -> bool {
        value.get_type().as_ptr() == self.ty.as_ptr()
    }

    #[inline]
    fn slot(&self, object: *mut ffi::PyObject, index: usize) -> *mut *mut ffi::PyObject {
        // SAFETY: the offset is that of a slot of this type, and callers pass only
        // objects of exactly this type (or ones they made with `alloc`).
        unsafe { (object as *mut u8).offset(self.offsets[index]) as *mut *mut ffi::PyObject }
    }

    /// Field `index` of `object` (exactly of this type); None for an unset slot.
    #[inline]
    pub fn get<'py>(&self, object: &Bound<'py, PyAny>, index: usize) -> Option<Bound<'py, PyAny>> {
        // SAFETY: see `slot`; the value is borrowed from the object and owned here.
        unsafe {
            let value = *self.slot(object.as_ptr(), index);
            if value.is_null() {
                None
            } else {
                Some(Bound::from_borrowed_ptr(object.py(), value))
            }
        }
    }

    /// A new object of this type with `values` in its slots (one per field, in order),
    /// made as `object.__new__(cls)` makes it: no `__init__`, no `__post_init__`.
    pub fn make<'py>(
        &self,
        py: Python<'py>,
        values: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        debug_assert_eq!(values.len(), self.offsets.len());
        // SAFETY: tp_alloc gives a zeroed object of the type (GC-tracked where the type
        // is); each slot is then given one reference, as a descriptor's __set__ would.
        unsafe {
            let ty = self.ty.as_ptr() as *mut ffi::PyTypeObject;
            let alloc = (*ty).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
            let object = alloc(ty, 0);
            if object.is_null() {
                return Err(PyErr::fetch(py));
            }
            for (index, value) in values.into_iter().enumerate() {
                *self.slot(object, index) = value.into_ptr();
            }
            Ok(Bound::from_owned_ptr(py, object))
        }
    }

    /// Every field of `object` (exactly of this type), for a copy with some changed;
    /// None when a slot is unset.
    pub fn values<'py>(&self, object: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
        (0..self.offsets.len())
            .map(|index| self.get(object, index))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.offsets.len()
    }
}
