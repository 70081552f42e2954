//! The fold of the events that make most of a log, compiled: `goaicore.fold.fold`'s rules
//! for them, on goaicore's own records.
//!
//! `Folder(snapshot, event, position, policy)` folds one event as the Python fold does
//! when nothing out of the ordinary happens: a redelivery (the snapshot unchanged), an
//! event seen again (counted), and a user message, assistant turn, tool result, game
//! event or failed turn that applies and leaves the snapshot inside its bounds. Anything
//! else it answers None, and the caller runs the Python fold from the same snapshot: an
//! event refused (its anomaly note is the Python fold's to word), a snapshot the size
//! bound would cut, another body type, bounds changing under a conversation, a value
//! of a type the records do not declare. So the Python fold stays the one definition;
//! property tests hold this one to it on any event sequence, snapshot for snapshot.
//!
//! The history's facts the fold asks for on every event (its encoded size, its
//! unanswered tool calls, the recent ids' measures) come from the history cache
//! (`Histories`), which the fold keeps up to date: a new message's bytes are written
//! here once, and the snapshot encoder copies them.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};

use crate::histories::{Entry, Histories, Pending};
use crate::sizes::{
    array_bytes, counts_bytes, optional_bytes, string_bytes, varint_len, Window, LONG,
};
use crate::slots::SlotType;

const SNAPSHOT: &[&str] = &[
    "conversation_id",
    "format_version",
    "messages",
    "summary",
    "last_position",
    "recent_event_ids",
    "event_count",
    "duplicate_count",
    "events_by_type",
    "message_count",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd_nanos",
    "anomalies",
    "deleted",
    "started_at",
    "updated_at",
    "max_bytes",
    "dropped_messages",
    "dropped_before",
    "truncated_messages",
    "title",
    "owner",
    "tags",
    "attributes",
    "forked_from",
    "earlier_bounds",
    "erased_before",
    "sealed",
];
const S_ID: usize = 0;
const S_VERSION: usize = 1;
const S_MESSAGES: usize = 2;
const S_SUMMARY: usize = 3;
const S_LAST: usize = 4;
const S_IDS: usize = 5;
const S_EVENTS: usize = 6;
const S_DUPLICATES: usize = 7;
const S_BY_TYPE: usize = 8;
const S_MESSAGE_COUNT: usize = 9;
const S_PROMPT: usize = 10;
const S_COMPLETION: usize = 11;
const S_COST: usize = 12;
const S_ANOMALIES: usize = 13;
const S_DELETED: usize = 14;
const S_STARTED: usize = 15;
const S_UPDATED: usize = 16;
const S_MAX_BYTES: usize = 17;
const S_TITLE: usize = 21;
const S_OWNER: usize = 22;
const S_TAGS: usize = 23;
const S_ATTRIBUTES: usize = 24;
const S_FORKED: usize = 25;
const S_BOUNDS: usize = 26;
const S_SEALED: usize = 28;

const MESSAGE: &[&str] = &[
    "role",
    "text",
    "tool_calls",
    "tool_call_id",
    "name",
    "content_json",
    "raw_json",
    "provider",
    "is_error",
    "event_id",
];
const M_ROLE: usize = 0;
const M_TOOL_CALLS: usize = 2;
const M_TOOL_CALL_ID: usize = 3;

const EVENT: &[&str] = &[
    "event_id",
    "conversation_id",
    "occurred_at",
    "source",
    "causation_id",
    "body",
    "sealed",
];
const E_ID: usize = 0;
const E_CONVERSATION: usize = 1;
const E_AT: usize = 2;
const E_BODY: usize = 5;

const USER: &[&str] = &["text", "content_json", "name", "raw_json", "provider"];
const ASSISTANT: &[&str] = &[
    "text",
    "tool_calls",
    "finish_reason",
    "usage",
    "provider",
    "model",
    "raw_json",
    "cost_usd_nanos",
];
const TOOL_RESULT: &[&str] = &[
    "tool_call_id",
    "name",
    "content",
    "is_error",
    "raw_json",
    "provider",
];
const GAME: &[&str] = &["kind", "text", "attributes"];
const FAILED: &[&str] = &["request_id", "kind", "message"];
const USAGE: &[&str] = &[
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "llm_calls",
];
const TOOL_CALL: &[&str] = &["id", "name", "arguments"];
const POSITION: &[&str] = &["partition", "offset"];
const FORK: &[&str] = &["conversation_id", "partition", "until_offset"];
const SEALED: &[&str] = &["key_id", "data"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Assistant,
    Tool,
    Game,
    Failed,
}

/// The bounds a fold runs under (`FoldPolicy`'s fields the fold reads).
struct Policy {
    version: i64,
    max_bytes: i64,
    recent_ids: usize,
    max_messages: usize,
    max_id_chars: Option<usize>,
}

/// `int` of exactly that type, in 64 bits.
fn int(value: &Bound<'_, PyAny>) -> Option<i64> {
    if !value.is_exact_instance_of::<PyInt>() {
        return None;
    }
    value.extract::<i64>().ok()
}

fn exact_str<'a, 'py>(value: &'a Bound<'py, PyAny>) -> Option<&'a Bound<'py, PyString>> {
    value.downcast_exact::<PyString>().ok()
}

/// The compiled fold (see the module docstring): made once per process by
/// `goaicore.fold.native` from the record types, the history cache and the size
/// policy's constants.
#[pyclass(frozen, module = "goaicore_native")]
pub struct Folder {
    snapshot: SlotType,
    message: SlotType,
    event: SlotType,
    user: SlotType,
    assistant: SlotType,
    tool_result: SlotType,
    game: SlotType,
    failed: SlotType,
    usage: SlotType,
    tool_call: SlotType,
    position: SlotType,
    fork: SlotType,
    sealed: SlotType,
    /// Each body type's name (`events_by_type`'s keys), by `Kind`.
    names: Vec<Py<PyString>>,
    /// user, assistant, tool, system.
    roles: Vec<Py<PyString>>,
    histories: Py<Histories>,
    /// `goaicore.fold.size._FIXED`, `goaicore.fold.bound._NOTE_ROOM`, `_SUMMARY_SHARE`.
    fixed: i64,
    note_room: i64,
    summary_share: i64,
}

/// What the fold made of one event, before anything is built.
struct Plan<'py> {
    values: Vec<Bound<'py, PyAny>>,
    message: Option<(Vec<u8>, Option<usize>)>,
    pending: Pending,
    window: Window,
    ids: Bound<'py, PyTuple>,
}

impl Folder {
    fn kind(&self, body: &Bound<'_, PyAny>) -> Option<Kind> {
        Some(if self.user.is(body) {
            Kind::User
        } else if self.assistant.is(body) {
            Kind::Assistant
        } else if self.tool_result.is(body) {
            Kind::Tool
        } else if self.game.is(body) {
            Kind::Game
        } else if self.failed.is(body) {
            Kind::Failed
        } else {
            return None;
        })
    }

    /// A new conversation's snapshot (`ConversationSnapshot(conversation_id=...)`).
    fn fresh<'py>(
        &self,
        py: Python<'py>,
        conversation_id: &Bound<'py, PyAny>,
    ) -> Vec<Bound<'py, PyAny>> {
        let none = || py.None().into_bound(py);
        let zero = || 0i64.into_pyobject(py).expect("an int").into_any();
        let empty = || PyTuple::empty(py).into_any();
        let no = || PyBool::new(py, false).to_owned().into_any();
        let mut values: Vec<Bound<'py, PyAny>> = Vec::with_capacity(SNAPSHOT.len());
        for index in 0..SNAPSHOT.len() {
            values.push(match index {
                S_ID => conversation_id.clone(),
                S_VERSION => 1i64.into_pyobject(py).expect("an int").into_any(),
                S_MESSAGES | S_IDS | S_ANOMALIES | S_TAGS | S_BOUNDS => empty(),
                S_BY_TYPE | S_ATTRIBUTES => PyDict::new(py).into_any(),
                S_DELETED => no(),
                3 | 4 | 15 | 16 | 19 | 21 | 22 | 25 | 27 | 28 => none(),
                _ => zero(),
            });
        }
        values
    }

    /// `goaicore.fold.pending._scan`: the history's last assistant or user message and
    /// its unanswered calls.
    fn scan(&self, messages: &Bound<'_, PyTuple>) -> Option<Pending> {
        for index in (0..messages.len()).rev() {
            let message = messages.get_item(index).ok()?;
            if !self.message.is(&message) {
                return None;
            }
            let role = self.message.get(&message, M_ROLE)?;
            let role = exact_str(&role)?.to_str().ok()?;
            if role == "assistant" {
                let mut calls = self.call_ids(&self.message.get(&message, M_TOOL_CALLS)?)?;
                for later in messages.iter().skip(index + 1) {
                    if !self.message.is(&later) {
                        return None;
                    }
                    if exact_str(&self.message.get(&later, M_ROLE)?)?
                        .to_str()
                        .ok()?
                        == "tool"
                    {
                        let answered = self.message.get(&later, M_TOOL_CALL_ID)?;
                        if let Some(answered) = exact_str(&answered) {
                            let answered = answered.to_str().ok()?;
                            calls.retain(|call| call != answered);
                        }
                    }
                }
                return Some(Pending {
                    last: index as isize,
                    calls,
                });
            }
            if role == "user" {
                return Some(Pending {
                    last: index as isize,
                    calls: Vec::new(),
                });
            }
        }
        Some(Pending {
            last: -1,
            calls: Vec::new(),
        })
    }

    /// The distinct ids of a tuple of tool calls.
    fn call_ids(&self, calls: &Bound<'_, PyAny>) -> Option<Vec<String>> {
        let calls = calls.downcast_exact::<PyTuple>().ok()?;
        let mut ids: Vec<String> = Vec::with_capacity(calls.len());
        for call in calls.iter() {
            if !self.tool_call.is(&call) {
                return None;
            }
            let id = self.tool_call.get(&call, 0)?;
            let id = exact_str(&id)?.to_str().ok()?.to_owned();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        Some(ids)
    }

    /// The history message `body` adds (`goaicore.fold.fold.history_message`).
    fn message<'py>(
        &self,
        py: Python<'py>,
        kind: Kind,
        body: &Bound<'py, PyAny>,
        event_id: &Bound<'py, PyAny>,
    ) -> Option<Bound<'py, PyAny>> {
        let none = || py.None().into_bound(py);
        let no = || PyBool::new(py, false).to_owned().into_any();
        let empty = || PyTuple::empty(py).into_any();
        let role = |i: usize| self.roles[i].bind(py).clone().into_any();
        let values = match kind {
            Kind::User => {
                let field = |i| self.user.get(body, i);
                // role, text, tool_calls, tool_call_id, name, content_json, raw_json,
                // provider, is_error, event_id
                vec![
                    role(0),
                    field(0)?,
                    empty(),
                    none(),
                    field(2)?,
                    field(1)?,
                    field(3)?,
                    field(4)?,
                    no(),
                    event_id.clone(),
                ]
            }
            Kind::Assistant => {
                let field = |i| self.assistant.get(body, i);
                let calls = field(1)?;
                calls.downcast_exact::<PyTuple>().ok()?;
                let provider = field(4)?;
                // `body.provider or None`
                let provider = if provider.is_none() {
                    provider
                } else if exact_str(&provider)?.to_str().ok()?.is_empty() {
                    none()
                } else {
                    provider
                };
                vec![
                    role(1),
                    field(0)?,
                    calls,
                    none(),
                    none(),
                    none(),
                    field(6)?,
                    provider,
                    no(),
                    event_id.clone(),
                ]
            }
            Kind::Tool => {
                let field = |i| self.tool_result.get(body, i);
                vec![
                    role(2),
                    field(2)?,
                    empty(),
                    field(0)?,
                    field(1)?,
                    none(),
                    field(4)?,
                    field(5)?,
                    field(3)?,
                    event_id.clone(),
                ]
            }
            Kind::Game => {
                let field = |i| self.game.get(body, i);
                vec![
                    role(3),
                    field(1)?,
                    empty(),
                    none(),
                    field(0)?,
                    none(),
                    none(),
                    none(),
                    no(),
                    event_id.clone(),
                ]
            }
            Kind::Failed => return None,
        };
        self.message.make(py, values).ok()
    }

    /// `goaicore.fold.size.bookkeeping_bytes` of a snapshot's `values`, its recent ids
    /// measured as `ids`.
    fn bookkeeping(
        &self,
        values: &[Bound<'_, PyAny>],
        ids: &Window,
        id_count: usize,
    ) -> Option<i64> {
        let anomalies = values[S_ANOMALIES].downcast_exact::<PyTuple>().ok()?;
        let by_type = values[S_BY_TYPE].downcast_exact::<PyDict>().ok()?;
        let bounds = values[S_BOUNDS].downcast_exact::<PyTuple>().ok()?.len();
        let total = self.fixed as usize
            + string_bytes(&values[S_ID])?
            + optional_bytes(&values[S_SUMMARY])?
            + ids.bytes(id_count)
            + counts_bytes(by_type)?
            + Window::of(anomalies)?.bytes(anomalies.len())
            + self.metadata(values)?
            + array_bytes(bounds, bounds * 4 * LONG)
            + self.sealed_bytes(&values[S_SEALED])?;
        Some(total as i64)
    }

    /// `metadata_bytes`: the title, owner, tags, attributes and fork origin.
    fn metadata(&self, values: &[Bound<'_, PyAny>]) -> Option<usize> {
        let (title, owner, origin) = (&values[S_TITLE], &values[S_OWNER], &values[S_FORKED]);
        let tags = values[S_TAGS].downcast_exact::<PyTuple>().ok()?;
        let attributes = values[S_ATTRIBUTES].downcast_exact::<PyDict>().ok()?;
        if title.is_none()
            && owner.is_none()
            && tags.is_empty()
            && attributes.is_empty()
            && origin.is_none()
        {
            return Some(2 + 2 * crate::sizes::ARRAY_END + 1);
        }
        let mut pairs = 0;
        for (key, value) in attributes.iter() {
            pairs += string_bytes(&key)? + string_bytes(&value)?;
        }
        let fork = if origin.is_none() {
            1
        } else {
            if !self.fork.is(origin) {
                return None;
            }
            1 + string_bytes(&self.fork.get(origin, 0)?)? + LONG + LONG
        };
        Some(
            optional_bytes(title)?
                + optional_bytes(owner)?
                + Window::of(tags)?.bytes(tags.len())
                + array_bytes(attributes.len(), pairs)
                + fork,
        )
    }

    /// `_sealed`: one byte for a snapshot in the clear (the fold's are).
    fn sealed_bytes(&self, sealed: &Bound<'_, PyAny>) -> Option<usize> {
        if sealed.is_none() {
            return Some(1);
        }
        if !self.sealed.is(sealed) {
            return None;
        }
        let data = self.sealed.get(sealed, 1)?;
        let data = data
            .downcast_exact::<pyo3::types::PyBytes>()
            .ok()?
            .as_bytes()
            .len();
        Some(1 + string_bytes(&self.sealed.get(sealed, 0)?)? + varint_len(data as i64) + data)
    }

    /// `goaicore.fold.size.snapshot_bytes`: the bookkeeping's bound and the messages'
    /// bytes (the cache's, where it holds this history).
    fn size(&self, snapshot: &Bound<'_, PyAny>) -> Option<i64> {
        if !self.snapshot.is(snapshot) {
            return None;
        }
        let values = self.snapshot.values(snapshot)?;
        let ids = values[S_IDS].downcast_exact::<PyTuple>().ok()?;
        let messages = values[S_MESSAGES].downcast_exact::<PyTuple>().ok()?;
        let key = exact_str(&values[S_ID])?.to_str().ok()?;
        let histories = self.histories.get();
        let mut inner = histories.held()?;
        let (total, window) = match inner.current(key, messages) {
            Some(entry) => {
                let window = match &entry.window {
                    Some((seen, window)) if seen.is(ids) => *window,
                    _ => Window::of(ids)?,
                };
                (entry.body.len(), window)
            }
            None => (
                histories.encode_all(messages).ok()?.1.len(),
                Window::of(ids)?,
            ),
        };
        Some(self.bookkeeping(&values, &window, ids.len())? + total as i64)
    }

    /// The fold of one event (see the module docstring); None: the Python fold's to make.
    fn fold<'py>(
        &self,
        py: Python<'py>,
        snapshot: &Bound<'py, PyAny>,
        event: &Bound<'py, PyAny>,
        position: &Bound<'py, PyAny>,
        policy: &Policy,
    ) -> Option<Bound<'py, PyAny>> {
        if !self.event.is(event) || !self.position.is(position) {
            return None;
        }
        let body = self.event.get(event, E_BODY)?;
        let kind = self.kind(&body)?;
        let event_id = self.event.get(event, E_ID)?;
        let conversation_id = self.event.get(event, E_CONVERSATION)?;
        exact_str(&event_id)?;
        exact_str(&conversation_id)?;
        let new = snapshot.is_none();
        let mut values = if new {
            self.fresh(py, &conversation_id)
        } else {
            if !self.snapshot.is(snapshot) {
                return None;
            }
            self.snapshot.values(snapshot)?
        };

        // A redelivery: at or below the last position of its partition.
        let last = &values[S_LAST];
        let (partition, offset) = (
            int(&self.position.get(position, 0)?)?,
            int(&self.position.get(position, 1)?)?,
        );
        if !last.is_none() {
            if !self.position.is(last) {
                return None;
            }
            if int(&self.position.get(last, 0)?)? == partition
                && offset <= int(&self.position.get(last, 1)?)?
            {
                return Some(snapshot.clone());
            }
        }

        // The bounds it is folded under from now on (`_under`): a new conversation's are
        // set here; a change under one that has events is the Python fold's.
        if int(&values[S_VERSION])? != policy.version
            || int(&values[S_MAX_BYTES])? != policy.max_bytes
        {
            if !last.is_none() {
                return None;
            }
            values[S_VERSION] = policy.version.into_pyobject(py).ok()?.into_any();
            values[S_MAX_BYTES] = policy.max_bytes.into_pyobject(py).ok()?.into_any();
        }

        // The same event published again: counted, nothing else.
        let ids = values[S_IDS].downcast_exact::<PyTuple>().ok()?.clone();
        if ids.contains(&event_id).ok()? {
            values[S_LAST] = position.clone();
            values[S_DUPLICATES] = (int(&values[S_DUPLICATES])?.checked_add(1)?)
                .into_pyobject(py)
                .ok()?
                .into_any();
            return self.snapshot.make(py, values).ok();
        }

        let histories = self.histories.get();
        let mut inner = histories.held()?;
        let key = exact_str(&conversation_id)?.to_str().ok()?.to_owned();
        let messages = values[S_MESSAGES].downcast_exact::<PyTuple>().ok()?.clone();

        // The history's facts: the cache's when it holds this very history.
        let (body_bytes, pending, window, fresh_entry) = match inner.current(&key, &messages) {
            Some(entry) => {
                let pending = match &entry.pending {
                    Some(pending) => pending.clone(),
                    None => self.scan(&messages)?,
                };
                let window = match &entry.window {
                    Some((seen, window)) if seen.is(&ids) => *window,
                    _ => Window::of(&ids)?,
                };
                (entry.body.len(), pending, window, None)
            }
            None => {
                let (ends, bytes) = histories.encode_all(&messages).ok()?;
                let entry = Entry::new(messages.clone().unbind(), ends, bytes);
                (
                    entry.body.len(),
                    self.scan(&messages)?,
                    Window::of(&ids)?,
                    Some(entry),
                )
            }
        };

        // Refused events are the Python fold's (it words their anomaly notes).
        let (_, id_chars) = crate::sizes::str_sizes(&event_id)?;
        if let Some(most) = policy.max_id_chars {
            if id_chars > most {
                return None;
            }
        }
        if !PyAnyMethods::eq(&values[S_ID], &conversation_id).ok()? {
            return None;
        }
        if values[S_DELETED].downcast_exact::<PyBool>().ok()?.is_true() {
            return None;
        }
        match kind {
            Kind::Tool => {
                let answers = self.tool_result.get(&body, 0)?;
                let answers = exact_str(&answers)?.to_str().ok()?;
                if !pending.calls.iter().any(|call| call == answers) {
                    return None;
                }
            }
            Kind::User | Kind::Assistant if !pending.calls.is_empty() => return None,
            _ => {}
        }

        // `_seen`: position, ids, counts, times.
        let name = self.names[kind as usize].bind(py);
        let by_type = values[S_BY_TYPE]
            .downcast_exact::<PyDict>()
            .ok()?
            .copy()
            .ok()?;
        let count = match by_type.get_item(name).ok()? {
            Some(count) => int(&count)?.checked_add(1)?,
            None => 1,
        };
        by_type.set_item(name, count).ok()?;
        let kept = ids.len() + 1;
        let dropped = kept.saturating_sub(policy.recent_ids);
        let new_ids = tuple_of(
            py,
            ids.iter()
                .skip(dropped)
                .chain(std::iter::once(event_id.clone())),
        )?;
        let new_window = match dropped {
            0 => window.slid(&event_id, None, &new_ids)?,
            1 => window.slid(&event_id, Some(&ids.get_item(0).ok()?), &new_ids)?,
            _ => Window::of(&new_ids)?,
        };
        let occurred_at = self.event.get(event, E_AT)?;
        let started = &values[S_STARTED];
        if !started.is_none() && !started.is_exact_instance_of::<pyo3::types::PyDateTime>() {
            return None; // `started_at or occurred_at` of a value that may be falsy
        }
        if started.is_none() {
            values[S_STARTED] = occurred_at.clone();
        }
        values[S_UPDATED] = occurred_at;
        values[S_LAST] = position.clone();
        values[S_IDS] = new_ids.clone().into_any();
        values[S_EVENTS] = (int(&values[S_EVENTS])?.checked_add(1)?)
            .into_pyobject(py)
            .ok()?
            .into_any();
        values[S_BY_TYPE] = by_type.into_any();

        // The body's own change: a message added (before the pending caller for a context
        // message while tool calls are unanswered), and a turn's tokens and cost.
        let mut plan = Plan {
            values,
            message: None,
            pending,
            window: new_window,
            ids: new_ids,
        };
        let mut total = body_bytes;
        if kind != Kind::Failed {
            let message = self.message(py, kind, &body, &event_id)?;
            let mut bytes = Vec::with_capacity(128);
            histories.encode_item(&message, &mut bytes).ok()?;
            total += bytes.len();
            let length = messages.len();
            let mut at = None;
            match kind {
                // `note_appended`: an assistant's calls are now the pending ones; a user
                // message ends every chain; a tool result answers one of them.
                Kind::Assistant => {
                    let calls = self.call_ids(&self.assistant.get(&body, 1)?)?;
                    plan.pending = Pending {
                        last: length as isize,
                        calls,
                    };
                }
                Kind::User => {
                    plan.pending = Pending {
                        last: length as isize,
                        calls: Vec::new(),
                    }
                }
                Kind::Tool => {
                    let answered = self.tool_result.get(&body, 0)?;
                    let answered = exact_str(&answered)?.to_str().ok()?.to_owned();
                    plan.pending.calls.retain(|call| *call != answered);
                }
                Kind::Game if !plan.pending.calls.is_empty() => {
                    // Placed before the calling message, which moves one on.
                    at = Some(plan.pending.last as usize);
                    plan.pending.last += 1;
                }
                _ => {}
            }
            let placed = match at {
                None => tuple_of(py, messages.iter().chain(std::iter::once(message)))?,
                Some(at) => tuple_of(
                    py,
                    messages
                        .iter()
                        .take(at)
                        .chain(std::iter::once(message))
                        .chain(messages.iter().skip(at)),
                )?,
            };
            plan.values[S_MESSAGES] = placed.into_any();
            plan.values[S_MESSAGE_COUNT] = (int(&plan.values[S_MESSAGE_COUNT])?.checked_add(1)?)
                .into_pyobject(py)
                .ok()?
                .into_any();
            plan.message = Some((bytes, at));
        }
        if kind == Kind::Assistant {
            let usage = self.assistant.get(&body, 3)?;
            let (prompt, completion) = if usage.is_none() {
                (0, 0)
            } else {
                if !self.usage.is(&usage) {
                    return None;
                }
                (
                    int(&self.usage.get(&usage, 0)?)?,
                    int(&self.usage.get(&usage, 1)?)?,
                )
            };
            let cost = self.assistant.get(&body, 7)?;
            let cost = if cost.is_none() { 0 } else { int(&cost)? };
            let add = |index: usize, by: i64, values: &mut Vec<Bound<'py, PyAny>>| -> Option<()> {
                values[index] = (int(&values[index])?.checked_add(by)?)
                    .into_pyobject(py)
                    .ok()?
                    .into_any();
                Some(())
            };
            add(S_PROMPT, prompt, &mut plan.values)?;
            add(S_COMPLETION, completion, &mut plan.values)?;
            add(S_COST, cost, &mut plan.values)?;
        }

        // `bounded`: a snapshot the bound would change is the Python fold's to cut.
        let summary = &plan.values[S_SUMMARY];
        if !summary.is_none()
            && string_bytes(summary)? as i64 > policy.max_bytes.div_euclid(self.summary_share)
        {
            return None;
        }
        let count = plan.values[S_MESSAGES]
            .downcast_exact::<PyTuple>()
            .ok()?
            .len();
        let budget = policy.max_bytes
            - self.bookkeeping(&plan.values, &plan.window, plan.ids.len())?
            - self.note_room;
        if count > policy.max_messages || total as i64 > budget {
            return None;
        }

        let folded = self.snapshot.make(py, plan.values).ok()?;
        let placed = self
            .snapshot
            .get(&folded, S_MESSAGES)?
            .downcast_into_exact::<PyTuple>()
            .ok()?;
        let window = Some((plan.ids.unbind(), plan.window));
        match fresh_entry {
            Some(mut entry) => {
                remember(&mut entry, placed, plan.message, plan.pending);
                entry.window = window;
                inner.put(&key, entry, histories.cap);
            }
            None => {
                let entry = inner.current(&key, &messages)?;
                let before = entry.body.len();
                remember(entry, placed, plan.message, plan.pending);
                entry.window = window;
                let after = entry.body.len();
                inner.resized(before, after);
                inner.trim(histories.cap);
            }
        }
        Some(folded)
    }
}

/// `entry` now describes `placed`: `message`'s bytes added (at `at`, or at the end),
/// with the history's unanswered calls now `pending`.
fn remember(
    entry: &mut Entry,
    placed: Bound<'_, PyTuple>,
    message: Option<(Vec<u8>, Option<usize>)>,
    pending: Pending,
) {
    match message {
        Some((bytes, None)) => {
            entry.body.extend_from_slice(&bytes);
            entry.ends.push(entry.body.len());
        }
        Some((bytes, Some(at))) => {
            let start = entry.ends[at];
            entry.body.splice(start..start, bytes.iter().copied());
            let grown = bytes.len();
            let mut ends = Vec::with_capacity(entry.ends.len() + 1);
            ends.extend_from_slice(&entry.ends[..=at]);
            ends.extend(entry.ends[at..].iter().map(|end| end + grown));
            entry.ends = ends;
        }
        None => {}
    }
    entry.messages = placed.unbind();
    entry.pending = Some(pending);
}

/// A tuple of `items`.
fn tuple_of<'py>(
    py: Python<'py>,
    items: impl Iterator<Item = Bound<'py, PyAny>>,
) -> Option<Bound<'py, PyTuple>> {
    PyTuple::new(py, items.collect::<Vec<_>>()).ok()
}

#[pymethods]
impl Folder {
    #[new]
    #[pyo3(signature = (types, histories, fixed, note_room, summary_share))]
    fn new(
        types: &Bound<'_, PyDict>,
        histories: &Bound<'_, Histories>,
        fixed: i64,
        note_room: i64,
        summary_share: i64,
    ) -> PyResult<Self> {
        let py = types.py();
        let get = |name: &str, fields: &[&str]| -> PyResult<SlotType> {
            let ty = types
                .get_item(name)?
                .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(name.to_owned()))?;
            SlotType::new(ty.downcast::<PyType>()?, fields)
        };
        let bodies = [
            ("UserMessage", USER),
            ("AssistantTurn", ASSISTANT),
            ("ToolResult", TOOL_RESULT),
            ("GameEvent", GAME),
            ("TurnFailed", FAILED),
        ];
        let mut slots = Vec::new();
        let mut names = Vec::new();
        for (name, fields) in bodies {
            let slot = get(name, fields)?;
            names.push(slot.ty.bind(py).name()?.unbind());
            slots.push(slot);
        }
        let mut slots = slots.into_iter();
        let mut next = || slots.next().expect("five body types");
        let roles = ["user", "assistant", "tool", "system"]
            .iter()
            .map(|r| PyString::intern(py, r).unbind())
            .collect();
        Ok(Folder {
            snapshot: get("ConversationSnapshot", SNAPSHOT)?,
            message: get("SnapshotMessage", MESSAGE)?,
            event: get("ConversationEvent", EVENT)?,
            user: next(),
            assistant: next(),
            tool_result: next(),
            game: next(),
            failed: next(),
            usage: get("Usage", USAGE)?,
            tool_call: get("ToolCall", TOOL_CALL)?,
            position: get("LogPosition", POSITION)?,
            fork: get("ForkOrigin", FORK)?,
            sealed: get("Sealed", SEALED)?,
            names,
            roles,
            histories: histories.clone().unbind(),
            fixed,
            note_room,
            summary_share,
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for slots in [
            &self.snapshot,
            &self.message,
            &self.event,
            &self.user,
            &self.assistant,
            &self.tool_result,
            &self.game,
            &self.failed,
            &self.usage,
            &self.tool_call,
            &self.position,
            &self.fork,
            &self.sealed,
        ] {
            visit.call(&slots.ty)?;
        }
        visit.call(&self.histories)
    }

    /// `goaicore.fold.size.snapshot_bytes(snapshot)`, or None: the Python function's to
    /// compute (a value the records do not declare, text with no UTF-8 form).
    fn snapshot_bytes(&self, py: Python<'_>, snapshot: &Bound<'_, PyAny>) -> Option<i64> {
        // A panic (a bug here) costs the speed of this call, never the caller's work.
        let size = catch_unwind(AssertUnwindSafe(|| self.size(snapshot))).unwrap_or(None);
        if size.is_none() && PyErr::occurred(py) {
            PyErr::fetch(py);
        }
        size
    }

    /// The snapshot after `event` at `position`, or None: the Python fold's to make.
    /// `policy` is `(version, max_bytes, recent_ids, max_messages, max_id_chars)`.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        snapshot: &Bound<'py, PyAny>,
        event: &Bound<'py, PyAny>,
        position: &Bound<'py, PyAny>,
        policy: (i64, i64, i64, i64, Option<i64>),
    ) -> Option<Bound<'py, PyAny>> {
        let (version, max_bytes, recent_ids, max_messages, max_id_chars) = policy;
        if recent_ids < 1 || max_messages < 0 || max_id_chars.is_some_and(|m| m < 0) {
            return None;
        }
        let policy = Policy {
            version,
            max_bytes,
            recent_ids: recent_ids as usize,
            max_messages: max_messages as usize,
            max_id_chars: max_id_chars.map(|m| m as usize),
        };
        // A panic (a bug here) hands the event to the Python fold, as any refusal does.
        let folded = catch_unwind(AssertUnwindSafe(|| {
            self.fold(py, snapshot, event, position, &policy)
        }))
        .unwrap_or(None);
        if folded.is_none() && PyErr::occurred(py) {
            PyErr::fetch(py); // a value the fold did not take: the Python fold decides
        }
        folded
    }
}
