"""flowbus.v1.Envelope (Protocols/flowbus/v1/envelope.proto) in a few lines of protobuf wire format,
so the suite needs no protobuf compiler: varints (wire type 0) and length-delimited fields (type 2)."""

from __future__ import annotations

# field name -> (number, kind); "text" and "bytes" are length-delimited, "int" (unsigned) and
# "int64" (signed) are varints.
FIELDS = {
    "version": (1, "int"),
    "kind": (2, "text"),
    "payload": (3, "bytes"),
    "idempotency_key": (4, "text"),
    "session": (5, "text"),
    "incarnation": (6, "int"),
    "writer": (7, "text"),
    "key_version": (8, "int"),
    "sent_at_unix_nanos": (9, "int64"),
}
NAMES = {number: (name, kind) for name, (number, kind) in FIELDS.items()}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 negatives travel as their two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise ValueError("truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if not byte & 0x80:
            return value, at


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()
CHECK_TAG = 11 << 3 | 5  # field 11, wire type 5 (fixed32): 0x5D


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as the envelope check uses it: crc32c(b"123456789") == 0xE3069283."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def seal(message: bytes) -> bytes:
    """The message followed by its check: field 11, the CRC-32C of every byte before it (Protocols/README.md section 5)."""
    return bytes(message) + bytes([CHECK_TAG]) + crc32c(message).to_bytes(4, "little")


def check_intact(data: bytes) -> bool:
    """Whether `data` ends with a check that agrees with the bytes before it."""
    return len(data) >= 5 and data[-5] == CHECK_TAG and int.from_bytes(data[-4:], "little") == crc32c(data[:-5])


def encode(**fields) -> bytes:
    """The envelope's fields in wire format, sealed with its check, as every Flowbus reader requires."""
    return seal(encode_unchecked(**fields))


def encode_unchecked(**fields) -> bytes:
    out = bytearray()
    for name, value in fields.items():
        number, kind = FIELDS[name]
        if kind in ("int", "int64"):
            if value:
                out += _varint(number << 3) + _varint(value)
        else:
            raw = value.encode() if isinstance(value, str) else bytes(value)
            if raw:
                out += _varint(number << 3 | 2) + _varint(len(raw)) + raw
    return bytes(out)


def decode(data: bytes) -> dict:
    """Known fields by name; unknown fields are skipped, as protobuf readers do. Raises ValueError
    when the check is missing or disagrees (the message was damaged on the way)."""
    if not check_intact(data):
        raise ValueError("the envelope does not end with a check that agrees with its bytes")
    fields: dict = {}
    at = 0
    while at < len(data):
        tag, at = _read_varint(data, at)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, at = _read_varint(data, at)
        elif wire == 2:
            length, at = _read_varint(data, at)
            if at + length > len(data):
                raise ValueError("truncated length-delimited field")
            value, at = data[at:at + length], at + length
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if number in NAMES:
            name, kind = NAMES[number]
            if kind == "text":
                value = value.decode()
            elif kind == "int64" and value >= 1 << 63:
                value -= 1 << 64
            fields[name] = value
    return fields


def echo_payload(text: str) -> bytes:
    """flowbus.v1.Echo { string text = 1; }"""
    raw = text.encode()
    return (_varint(1 << 3 | 2) + _varint(len(raw)) + raw) if raw else b""


def echo_text(payload: bytes) -> str:
    text = ""
    at = 0
    while at < len(payload):
        tag, at = _read_varint(payload, at)
        if tag & 7 != 2:
            raise ValueError(f"Echo: unexpected wire type {tag & 7}")
        length, at = _read_varint(payload, at)
        if tag >> 3 == 1:
            text = payload[at:at + length].decode()
        at += length
    return text


def error_fields(payload: bytes) -> dict:
    """flowbus.v1.Error { ErrorCode code = 1; string message = 2; string hint = 3; }"""
    fields = {"code": 0, "message": "", "hint": ""}
    at = 0
    while at < len(payload):
        tag, at = _read_varint(payload, at)
        if tag & 7 == 0:
            value, at = _read_varint(payload, at)
        else:
            length, at = _read_varint(payload, at)
            value, at = payload[at:at + length].decode(errors="replace"), at + length
        name = {1: "code", 2: "message", 3: "hint"}.get(tag >> 3)
        if name:
            fields[name] = value
    return fields


ERROR_CODE_UNKNOWN_SERVICE = 3
ERROR_CODE_DAMAGED = 11
