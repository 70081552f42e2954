//! Encoded sizes as `goaicore.fold.size` computes them, for the fold's size bound.
//!
//! The Python module is the reference; these follow it line by line (every long
//! charged its widest varint where it does so, strings exactly).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

/// The widest zigzag varint of a 64-bit long (`_LONG`).
pub const LONG: usize = 10;
/// An array's or a map's end marker (`_ARRAY_END`).
pub const ARRAY_END: usize = 1;

/// `_varint`: bytes of the zigzag varint of `value`.
#[inline]
pub fn varint_len(value: i64) -> usize {
    let zigzag = ((value << 1) ^ (value >> 63)) as u64;
    let bits = 64 - zigzag.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// A str's UTF-8 size and its length in code points; None for a value that is not
/// exactly a str or has no UTF-8 form (a lone surrogate: the Python fold decides).
#[inline]
pub fn str_sizes(value: &Bound<'_, PyAny>) -> Option<(usize, usize)> {
    let text = value.downcast_exact::<PyString>().ok()?;
    // SAFETY: `text` is a str; an ASCII str's code points are its UTF-8 bytes.
    unsafe {
        let pointer = text.as_ptr();
        let chars = ffi::PyUnicode_GET_LENGTH(pointer) as usize;
        if ffi::PyUnicode_IS_ASCII(pointer) != 0 {
            return Some((chars, chars));
        }
        let mut size: ffi::Py_ssize_t = 0;
        if ffi::PyUnicode_AsUTF8AndSize(pointer, &mut size).is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some((size as usize, chars))
    }
}

/// `string_bytes`: an Avro string's length varint and UTF-8 bytes.
#[inline]
pub fn string_bytes(value: &Bound<'_, PyAny>) -> Option<usize> {
    let (size, _) = str_sizes(value)?;
    Some(
        if size < 64 {
            1
        } else {
            varint_len(size as i64)
        } + size,
    )
}

/// `_optional`: a nullable string.
#[inline]
pub fn optional_bytes(value: &Bound<'_, PyAny>) -> Option<usize> {
    if value.is_none() {
        Some(1)
    } else {
        Some(1 + string_bytes(value)?)
    }
}

/// `_array`: a non-empty array's count, items and end; an empty one's end.
#[inline]
pub fn array_bytes(count: usize, items: usize) -> usize {
    if count == 0 {
        ARRAY_END
    } else {
        varint_len(count as i64) + items + ARRAY_END
    }
}

/// What `_strings` needs of an array of strings: the UTF-8 total, the longest length in
/// code points, and how many strings have that length.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Window {
    pub total: usize,
    pub longest: usize,
    pub at_longest: usize,
}

impl Window {
    /// The window of `strings` (exactly a tuple of str), measured.
    pub fn of(strings: &Bound<'_, PyTuple>) -> Option<Window> {
        let mut window = Window::default();
        for text in strings.iter() {
            window.add(&text)?;
        }
        Some(window)
    }

    fn add(&mut self, text: &Bound<'_, PyAny>) -> Option<()> {
        let (size, chars) = str_sizes(text)?;
        self.total += size;
        if chars > self.longest {
            self.longest = chars;
            self.at_longest = 1;
        } else if chars == self.longest {
            self.at_longest += 1;
        }
        Some(())
    }

    /// The window after `added` joined it and `dropped` (its oldest) left; `after` is the
    /// new window's strings, measured again when its longest string left.
    pub fn slid(
        mut self,
        added: &Bound<'_, PyAny>,
        dropped: Option<&Bound<'_, PyAny>>,
        after: &Bound<'_, PyTuple>,
    ) -> Option<Window> {
        if let Some(text) = dropped {
            let (size, chars) = str_sizes(text)?;
            self.total -= size;
            if chars == self.longest {
                self.at_longest -= 1;
            }
        }
        if self.at_longest == 0 && self.longest > 0 {
            return Window::of(after);
        }
        self.add(added)?;
        Some(self)
    }

    /// `_strings`: the array's size, each length varint charged at the widest one.
    pub fn bytes(&self, count: usize) -> usize {
        if count == 0 {
            return ARRAY_END;
        }
        let widest = varint_len(4 * self.longest as i64);
        array_bytes(count, self.total + widest * count)
    }
}

/// `_counts`: the events-by-type map (exactly a dict of str to int).
pub fn counts_bytes(counts: &Bound<'_, PyDict>) -> Option<usize> {
    if counts.is_empty() {
        return Some(ARRAY_END);
    }
    let mut total = 0;
    for (name, _) in counts.iter() {
        total += string_bytes(&name)? + LONG;
    }
    Some(array_bytes(counts.len(), total))
}
