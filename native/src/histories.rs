//! The history cache: each conversation's messages as last folded or encoded, with their
//! Avro bytes and what the fold asks of them.
//!
//! A snapshot's Avro body holds its `messages` array as one block: a count, each item's
//! encoding, a zero. The fold keeps the same immutable message objects from one
//! snapshot to the next, so the bytes of a history's items are kept beside it (the
//! tuple itself, for identity) and a new snapshot's array is the kept bytes plus those
//! of its new messages. The fold writes a new message's bytes when it makes the
//! message (its size is the size bound's figure: `message_bytes` is the exact size of
//! its encoding), and keeps there too the history's unanswered tool calls and the
//! recent-ids window's measures, so that no event costs as much as the history is long.
//!
//! Entries are keyed by conversation id and forgotten, least recently used first, past
//! `cache_bytes` of item bytes. A cache that is busy (held by a fold or an encode that
//! Python code interrupted, on this thread or another) is not waited for: the caller
//! goes without it, so the cache changes no result, only the time taken.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};

use crate::sizes::Window;
use crate::writer::{length, node, visit_node, write, Fail, Node, Written};

/// The unanswered tool calls of a history (`goaicore.fold.pending`): the index of its
/// last assistant or user message (-1: none), and that message's call ids no tool
/// result after it answers (none unless it is an assistant's).
#[derive(Clone, Debug, Default)]
pub struct Pending {
    pub last: isize,
    pub calls: Vec<String>,
}

/// One conversation's history as last seen.
pub struct Entry {
    pub messages: Py<PyTuple>,
    /// `ends[i]..ends[i + 1]` is item i's bytes in `body`; `ends[0] == 0`.
    pub ends: Vec<usize>,
    pub body: Vec<u8>,
    pub pending: Option<Pending>,
    /// The recent event ids this entry measured, and their measures.
    pub window: Option<(Py<PyTuple>, Window)>,
    tick: u64,
}

impl Entry {
    pub fn new(messages: Py<PyTuple>, ends: Vec<usize>, body: Vec<u8>) -> Self {
        Entry {
            messages,
            ends,
            body,
            pending: None,
            window: None,
            tick: 0,
        }
    }
}

#[derive(Default)]
pub struct Inner {
    entries: HashMap<String, Entry>,
    bytes: usize,
    tick: u64,
}

impl Inner {
    /// The entry of `key` when it describes exactly `messages`.
    pub fn current(&mut self, key: &str, messages: &Bound<'_, PyTuple>) -> Option<&mut Entry> {
        let tick = self.tick + 1;
        let entry = self.entries.get_mut(key)?;
        if !entry.messages.is(messages) {
            return None;
        }
        self.tick = tick;
        entry.tick = tick;
        Some(entry)
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Keep `entry` for `key`, forgetting the least recently used past `cap` bytes.
    pub fn put(&mut self, key: &str, mut entry: Entry, cap: usize) {
        self.tick += 1;
        entry.tick = self.tick;
        let size = entry.body.len();
        if let Some(old) = self.entries.remove(key) {
            self.bytes -= old.body.len();
        }
        if size > cap {
            return; // larger than the whole cache: not kept, as the Python encoder does
        }
        self.bytes += size;
        self.entries.insert(key.to_owned(), entry);
        self.trim(cap);
    }

    /// Forget the least recently used entries once past `cap` bytes, down to 7/8 of it,
    /// so a full cache sorts its entries rarely.
    pub fn trim(&mut self, cap: usize) {
        if self.bytes <= cap {
            return;
        }
        let mut ages: Vec<(u64, String)> = self
            .entries
            .iter()
            .map(|(k, e)| (e.tick, k.clone()))
            .collect();
        ages.sort_unstable();
        let target = cap - cap / 8;
        for (_, old) in ages {
            if self.bytes <= target {
                break;
            }
            if let Some(gone) = self.entries.remove(&old) {
                self.bytes -= gone.body.len();
            }
        }
    }

    /// Forget `key`'s history.
    pub fn forget(&mut self, key: &str) {
        if let Some(gone) = self.entries.remove(key) {
            self.bytes -= gone.body.len();
        }
    }

    /// Record that an entry changed in place from `before` bytes to `after`.
    pub fn resized(&mut self, before: usize, after: usize) {
        self.bytes = self.bytes + after - before;
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The history cache (see the module docstring). `Histories(item_plan, not_direct,
/// cache_bytes)`: the plan of the messages array's items, as a `Writer`'s.
#[pyclass(frozen, module = "goaicore_native")]
pub struct Histories {
    item: Node,
    not_direct: Py<PyType>,
    pub cap: usize,
    pub inner: Mutex<Inner>,
}

impl Histories {
    /// The cache, unless it is busy (see the module docstring). One left behind by a
    /// panic (a bug) is emptied first: what it held may be half changed.
    pub(crate) fn held(&self) -> Option<MutexGuard<'_, Inner>> {
        match self.inner.try_lock() {
            Ok(inner) => Some(inner),
            Err(TryLockError::WouldBlock) => None,
            Err(TryLockError::Poisoned(poisoned)) => {
                let mut inner = poisoned.into_inner();
                *inner = Inner::default();
                self.inner.clear_poison();
                Some(inner)
            }
        }
    }

    /// One item's bytes (a history message), appended to `out`.
    pub(crate) fn encode_item(&self, message: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> Written {
        write(&self.item, message, out)
    }

    /// The items of `messages`, encoded: their `ends` (from 0) and bytes.
    pub(crate) fn encode_all(
        &self,
        messages: &Bound<'_, PyTuple>,
    ) -> Result<(Vec<usize>, Vec<u8>), Fail> {
        let mut body = Vec::with_capacity(messages.len() * 64);
        let mut ends = Vec::with_capacity(messages.len() + 1);
        ends.push(0);
        for message in messages.iter() {
            self.encode_item(&message, &mut body)?;
            ends.push(body.len());
        }
        Ok((ends, body))
    }

    /// A snapshot's `messages` array (the snapshot is `record`): the count, the items and
    /// the end, the items copied from the cache where they are known.
    pub(crate) fn write_messages(&self, record: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> Written {
        let py = record.py();
        let messages = record.getattr(pyo3::intern!(py, "messages"))?;
        let messages = messages
            .downcast_exact::<PyTuple>()
            .map_err(|_| Fail::NotDirect("messages not a tuple"))?;
        let conversation_id = record.getattr(pyo3::intern!(py, "conversation_id"))?;
        let key = conversation_id
            .downcast_exact::<PyString>()
            .ok()
            .and_then(|id| id.to_str().ok().map(str::to_owned));
        if messages.is_empty() {
            // A history emptied (reset, deleted, erased): what it held is not kept here.
            if let (Some(key), Some(mut inner)) = (&key, self.held()) {
                inner.forget(key);
            }
            out.push(0);
            return Ok(());
        }
        let guard = key.as_ref().and_then(|_| self.held());
        let (Some(key), Some(mut inner)) = (key, guard) else {
            // No key to keep it under, or the cache is busy: written whole.
            let (_, body) = self.encode_all(messages)?;
            array(messages.len(), &body, out);
            return Ok(());
        };
        if let Some(entry) = inner.current(&key, messages) {
            array(messages.len(), &entry.body, out);
            return Ok(());
        }
        let (ends, body) = match inner.get(&key) {
            Some(previous) => self.extend(previous, messages)?,
            None => self.encode_all(messages)?,
        };
        array(messages.len(), &body, out);
        inner.put(
            &key,
            Entry::new(messages.clone().unbind(), ends, body),
            self.cap,
        );
        Ok(())
    }

    /// The items of `messages`, reusing `previous`'s bytes for the run of messages they
    /// share (the same objects: dropped from the front, added or inserted after it).
    fn extend(
        &self,
        previous: &Entry,
        messages: &Bound<'_, PyTuple>,
    ) -> Result<(Vec<usize>, Vec<u8>), Fail> {
        let py = messages.py();
        let before = previous.messages.bind(py);
        let first = messages.get_item(0)?;
        let Some(start) = before.iter().position(|m| m.is(&first)) else {
            return self.encode_all(messages);
        };
        let mut shared = 0;
        for (mine, theirs) in before.iter().skip(start).zip(messages.iter()) {
            if !mine.is(&theirs) {
                break;
            }
            shared += 1;
        }
        let offset = previous.ends[start];
        let mut body = Vec::with_capacity(previous.body.len() + 64);
        body.extend_from_slice(&previous.body[offset..previous.ends[start + shared]]);
        let mut ends: Vec<usize> = previous.ends[start..=start + shared]
            .iter()
            .map(|end| end - offset)
            .collect();
        for message in messages.iter().skip(shared) {
            self.encode_item(&message, &mut body)?;
            ends.push(body.len());
        }
        Ok((ends, body))
    }
}

/// The array of `count` items whose bytes are `body`.
fn array(count: usize, body: &[u8], out: &mut Vec<u8>) {
    if count > 0 {
        length(count, out);
        out.extend_from_slice(body);
    }
    out.push(0);
}

#[pymethods]
impl Histories {
    #[new]
    fn new(
        item_plan: &Bound<'_, PyAny>,
        not_direct: &Bound<'_, PyType>,
        cache_bytes: usize,
    ) -> PyResult<Self> {
        Ok(Histories {
            item: node(item_plan)?,
            not_direct: not_direct.clone().unbind(),
            cap: cache_bytes,
            inner: Mutex::new(Inner::default()),
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.not_direct)?;
        visit_node(&self.item, &visit)?;
        // The kept tuples are plain data (messages), which hold no reference back here.
        Ok(())
    }

    /// The bytes of the items kept (at most `cache_bytes`).
    #[getter]
    fn remembered_bytes(&self) -> usize {
        self.held().map(|inner| inner.bytes()).unwrap_or(0)
    }

    #[getter]
    fn cache_bytes(&self) -> usize {
        self.cap
    }

    /// Forget every history (a test's clean start; the results never depend on it).
    fn clear(&self) {
        if let Some(mut inner) = self.held() {
            *inner = Inner::default();
        }
    }

    fn __len__(&self) -> usize {
        self.held().map(|inner| inner.entries.len()).unwrap_or(0)
    }
}
