"""Typed records <-> single-object Avro bytes, one ``Codec`` per record type.

Encoding checks the record against the current schema before writing (``check.py``), so
a wrong type is an ``EncodeError`` naming the field, never a half-written or silently
coerced payload (fastavro's writer alone would write ``True`` or ``1.5`` as the long 1).
Decoding looks the writer schema up by fingerprint and resolves it against the current
reader schema, so bytes written by any released version read as today's records. Every
failure to decode is a ``DecodeError`` with a reason; nothing else escapes for bad bytes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastavro import schemaless_reader, schemaless_writer
from fastavro.read import SchemaResolutionError
from fastavro.validation import ValidationError, validate

from goaicore.records import convert
from goaicore.records.avro.check import compile_check
from goaicore.records.avro.direct_reader import compile_reader
from goaicore.records.avro.direct_writer import compile_writer, write_direct
from goaicore.records.avro.errors import DecodeError, EncodeError
from goaicore.records.avro.framing import HEADER_SIZE, header, read_header
from goaicore.records.avro.registry import SchemaRegistry, WriterSchema
from goaicore.records.types import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationKey,
    ConversationSnapshot,
    ReplyChunk,
)

R = TypeVar("R")

_MAX_DETAIL = 240


def _brief(exc: BaseException) -> str:
    """An exception as text short enough for a log line (fastavro's can quote whole schemas)."""
    text = repr(exc) if not str(exc) else f"{type(exc).__name__}: {exc}"
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


def writer_of(
    registry: SchemaRegistry, data: bytes | bytearray | memoryview | None
) -> WriterSchema:
    """The known writer schema of a payload, from its header alone."""
    fp = read_header(data)
    writer = registry.writer(fp)
    if writer is None:
        raise DecodeError(
            "unknown-fingerprint",
            f"written with a schema this reader does not know (fingerprint {fp.hex()}); "
            "a newer writer, or not one of our records",
            fingerprint=fp.hex(),
        )
    return writer


class Codec(Generic[R]):
    """Encodes and decodes one record type with the registry's schemas for it."""

    def __init__(
        self,
        name: str,
        record_type: type[R],
        registry: SchemaRegistry,
        to_avro: Callable[[R], dict[str, Any]],
        from_avro: Callable[[Mapping[str, Any]], R],
        native: bool = True,
    ) -> None:
        """``native``: read and write directly with the compiled core where it is
        installed (else, and when False, with the generated Python reader and writer)."""
        self.name = name
        self.record_type = record_type
        self.registry = registry
        self._to_avro = to_avro
        self._from_avro = from_avro
        self._reader = registry.reader(name)
        self.writer = registry.current(name)
        self._header = header(self.writer.fingerprint)
        self._check = compile_check(self.writer.parsed)
        self._direct = compile_reader(self.writer.parsed, record_type, native=native)
        self._direct_write = compile_writer(self.writer.parsed, record_type, native=native)

    def to_datum(self, record: R) -> dict[str, Any]:
        """The validated fastavro dict of ``record``; EncodeError when it does not fit."""
        if not isinstance(record, self.record_type):
            raise EncodeError(f"expected a {self.name}, got {type(record).__name__}")
        try:
            datum = self._to_avro(record)
        except (TypeError, AttributeError, ValueError) as exc:
            raise EncodeError(f"cannot encode this {self.name}: {exc}") from exc
        if not self._check(datum):
            # The slow path, only for bad records: fastavro names every offending field.
            problems: tuple[str, ...] = (
                "a value has a type the schema does not allow (e.g. a bool as a number)",
            )
            try:
                validate(datum, self.writer.parsed, raise_errors=True)
            except ValidationError as exc:
                problems = tuple(str(problem) for problem in exc.errors)
            except Exception:  # fastavro's validate trips on some values (a () as a record)
                pass
            raise EncodeError(f"this {self.name} does not match its schema", problems)
        return datum

    def encode(self, record: R) -> bytes:
        """Single-object bytes of ``record``, written with the current schema.

        A record of exactly the declared types is written by the direct writer (see
        ``direct_writer``); anything it does not take goes to :meth:`encode_generic`,
        which writes it or names what does not fit.
        """
        direct = write_direct(self._direct_write, self._header, record)
        return direct if direct is not None else self.encode_generic(record)

    def encode_generic(self, record: R) -> bytes:
        """Single-object bytes of ``record`` by way of its checked dict and fastavro."""
        datum = self.to_datum(record)
        out = io.BytesIO()
        out.write(self._header)
        try:
            schemaless_writer(out, self.writer.parsed, datum)
        except (ValueError, TypeError, OverflowError) as exc:
            # What validation cannot see, e.g. a lone surrogate that has no UTF-8 form.
            raise EncodeError(f"cannot encode this {self.name}: {exc}") from exc
        return out.getvalue()

    def decode_datum(self, data: bytes | bytearray | memoryview | None) -> dict[str, Any]:
        """The payload as a fastavro dict in the shape of the current reader schema."""
        if data is None:
            raise DecodeError("empty", "no payload (a tombstone?)")
        writer = writer_of(self.registry, data)
        if writer.name != self.name:
            raise DecodeError(
                "wrong-schema",
                f"expected a {self.name}, got a {writer.label}",
                fingerprint=writer.fingerprint.hex(),
                schema=writer.name,
            )
        return read_body(data, writer, None if writer.same_as_reader else self._reader)

    def decode(self, data: bytes | bytearray | memoryview | None) -> R:
        """The typed record of a payload written with any known version of the schema.

        A payload written with the current schema is read by the direct reader (see
        ``direct_reader``); anything it does not take as is goes to :meth:`decode_generic`.
        """
        direct = self._direct
        if direct is not None and type(data) is bytes and data.startswith(self._header):
            try:
                record, end = direct(data, HEADER_SIZE)
            except Exception:  # fastavro reads it below, and its result or error stands
                pass
            else:
                if end == len(data):
                    result: R = record
                    return result
        return self.decode_generic(data)

    def decode_generic(self, data: bytes | bytearray | memoryview | None) -> R:
        """The typed record of a payload, read by fastavro (the reference reader)."""
        datum = self.decode_datum(data)
        try:
            return self._from_avro(datum)
        except (KeyError, TypeError, ValueError) as exc:
            raise DecodeError(
                "invalid-body",
                f"decoded {self.name} does not make a record: {_brief(exc)}",
                fingerprint=self.writer.fingerprint.hex(),
                schema=self.name,
            ) from exc


def read_body(
    data: bytes | bytearray | memoryview, writer: WriterSchema, reader: Any | None
) -> dict[str, Any]:
    """Read the body after the header with ``writer``, resolved to ``reader`` when given."""
    context = {"fingerprint": writer.fingerprint.hex(), "schema": writer.name}
    stream = io.BytesIO(data)
    stream.seek(HEADER_SIZE)
    try:
        datum = schemaless_reader(
            stream,
            writer.parsed,
            reader,
            return_record_name=True,
            return_record_name_override=True,
        )
    except EOFError as exc:
        raise DecodeError("truncated", f"the {writer.label} body ends early", **context) from exc
    except SchemaResolutionError as exc:
        raise DecodeError(
            "incompatible-schema", f"{writer.label} does not resolve: {_brief(exc)}", **context
        ) from exc
    except Exception as exc:  # corrupt bytes can raise almost anything inside fastavro
        if stream.tell() >= len(data):
            # fastavro's compiled reader reports reading past the end as IndexError.
            raise DecodeError(
                "truncated", f"the {writer.label} body ends early", **context
            ) from exc
        raise DecodeError(
            "invalid-body", f"the {writer.label} body is corrupt: {_brief(exc)}", **context
        ) from exc
    extra = len(data) - stream.tell()
    if extra:
        raise DecodeError(
            "invalid-body", f"{extra} byte(s) after the end of the {writer.label} body", **context
        )
    if not isinstance(datum, dict):
        raise DecodeError("invalid-body", f"the {writer.label} body is not a record", **context)
    return datum


@dataclass(frozen=True)
class Codecs:
    """The codecs of every record type over one registry."""

    registry: SchemaRegistry
    event: Codec[ConversationEvent]
    chat_request: Codec[ChatRequest]
    chat_reply: Codec[ChatReply]
    snapshot: Codec[ConversationSnapshot]
    key: Codec[ConversationKey]
    reply_chunk: Codec[ReplyChunk]

    @classmethod
    def for_registry(cls, registry: SchemaRegistry, native: bool = True) -> Codecs:
        """The codecs of every record type; ``native`` as for :class:`Codec`."""

        def codec(name: str, record_type: Any, to_avro: Any, from_avro: Any) -> Codec[Any]:
            return Codec(name, record_type, registry, to_avro, from_avro, native=native)

        return cls(
            registry=registry,
            event=codec(
                "ConversationEvent",
                ConversationEvent,
                convert.event_to_avro,
                convert.event_from_avro,
            ),
            chat_request=codec(
                "ChatRequest",
                ChatRequest,
                convert.chat_request_to_avro,
                convert.chat_request_from_avro,
            ),
            chat_reply=codec(
                "ChatReply", ChatReply, convert.chat_reply_to_avro, convert.chat_reply_from_avro
            ),
            snapshot=codec(
                "ConversationSnapshot",
                ConversationSnapshot,
                convert.snapshot_to_avro,
                convert.snapshot_from_avro,
            ),
            key=codec(
                "ConversationKey", ConversationKey, convert.key_to_avro, convert.key_from_avro
            ),
            reply_chunk=codec(
                "ReplyChunk", ReplyChunk, convert.reply_chunk_to_avro, convert.reply_chunk_from_avro
            ),
        )

    @property
    def all(self) -> tuple[Codec[Any], ...]:
        return (
            self.event,
            self.chat_request,
            self.chat_reply,
            self.snapshot,
            self.key,
            self.reply_chunk,
        )

    def by_name(self, name: str) -> Codec[Any]:
        """The codec of the record called ``name`` (e.g. ``ChatReply``)."""
        for codec in self.all:
            if codec.name == name:
                return codec
        raise KeyError(name)

    def by_type(self, record: object) -> Codec[Any]:
        """The codec for a record's type; EncodeError when it is none of ours."""
        for codec in self.all:
            if type(record) is codec.record_type:
                return codec
        raise EncodeError(
            f"cannot encode a {type(record).__name__}: not ConversationEvent, ChatRequest, "
            "ChatReply, ConversationSnapshot, ConversationKey or ReplyChunk"
        )
