"""What every cross-process message says it is, and the check made on receipt.

Each message between two processes travels behind a fixed-size header: the program it
belongs to (name and fingerprint), the step of that program, the collective, the value's
type, the message's dtype and byte count, and its sequence number among the messages
between those two processes in that direction. A receiver knows what it expects from each
peer, so it compares the header with its own expectation byte for byte, and only on a
difference decodes both to say which process was doing what:

    process 0 is at all-reduce (sum) #3 of jit(f) step 2 (float32[4,8]); process 1 sent
    all-gather #3 of jit(g) step 0 (float32[2,8])

The caller that knows which program and step a collective belongs to (the executor, an
eager shard_map, device_put) says so with ``speaking_for``; the Communicator adds the
collective's kind, the transport the rest.
"""

from __future__ import annotations

import contextvars
import hashlib
import struct
from dataclasses import dataclass, field

import numpy as np

_TEXT = {"program": 64, "collective": 64, "value": 48, "dtype": 16}
_SUBJECT = struct.Struct("<Qq")  # fingerprint, step: fixed for a Subject
_COUNTS = struct.Struct("<qQ")  # sequence number, bytes: packed per message, last
HEADER_BYTES = _SUBJECT.size + sum(_TEXT.values()) + _COUNTS.size


@dataclass(frozen=True, eq=False)  # compared by identity: a cache key made once per step
class Speaker:
    """The program (``name``, ``fingerprint``), step, operation (``psum``, ``reshard``)
    and value that messages belong to."""

    name: str = "an eager operation"
    fingerprint: int = 0
    step: int = 0
    operation: str = ""
    value: str = ""
    subjects: dict = field(default_factory=dict, repr=False)  # by ``what``: see ``subject``


EAGER = Speaker()
_speaker: contextvars.ContextVar[Speaker | None] = contextvars.ContextVar("speaker", default=None)


def fingerprint(text: str) -> int:
    """A 64-bit digest of ``text`` (a program's description)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


class speaking_for:
    """``with speaking_for(speaker):`` messages sent inside carry ``speaker``'s program,
    step and value."""

    __slots__ = ("speaker", "token")

    def __init__(self, speaker: Speaker) -> None:
        self.speaker = speaker

    def __enter__(self) -> None:
        self.token = _speaker.set(self.speaker)

    def __exit__(self, *exc) -> None:
        _speaker.reset(self.token)


def current_speaker() -> Speaker:
    return _speaker.get() or EAGER


def _fixed(text: str, size: int) -> bytes:
    encoded = text.encode()[:size]
    return encoded + b" " * (size - len(encoded))


class Subject:
    """What the messages of one round of a collective are about: ``speaker``'s program,
    step and value, and ``what`` the Communicator does ("all-reduce (sum)"). Made once per
    step (``subject``), so a message packs only its sequence number and byte count."""

    def __init__(self, speaker: Speaker, what: str) -> None:
        operation = f"{what} for {speaker.operation}" if speaker.operation else what
        self._texts = (
            _SUBJECT.pack(speaker.fingerprint, speaker.step)
            + _fixed(speaker.name, _TEXT["program"])
            + _fixed(operation, _TEXT["collective"])
            + _fixed(speaker.value, _TEXT["value"])
        )
        self._fixed: dict[np.dtype, bytes] = {}  # all but the counts, by the buffer's dtype

    def header(self, sequence: int, buffer: np.ndarray) -> bytes:
        """The header of message ``sequence`` carrying ``buffer``."""
        fixed = self._fixed.get(buffer.dtype)
        if fixed is None:
            kind = _fixed(buffer.dtype.str, _TEXT["dtype"])
            fixed = self._fixed[buffer.dtype] = self._texts + kind
        return fixed + _COUNTS.pack(sequence, buffer.nbytes)


def subject(speaker: Speaker, what: str) -> Subject:
    """The Subject of ``speaker``'s messages doing ``what``, made once and kept by
    ``speaker``."""
    made = speaker.subjects.get(what)
    if made is None:
        made = speaker.subjects[what] = Subject(speaker, what)
    return made


@dataclass(frozen=True)
class Header:
    """A header decoded, for an error message."""

    fingerprint: int
    step: int
    sequence: int
    nbytes: int
    program: str
    collective: str
    value: str
    dtype: str

    @classmethod
    def decode(cls, raw: bytes) -> Header:
        fingerprint, step = _SUBJECT.unpack_from(raw)
        texts, offset = [], _SUBJECT.size
        for size in _TEXT.values():
            texts.append(raw[offset : offset + size].decode(errors="replace").rstrip())
            offset += size
        sequence, nbytes = _COUNTS.unpack_from(raw, offset)
        return cls(fingerprint, step, sequence, nbytes, *texts)

    def describe(self) -> str:
        value = f" ({self.value})" if self.value else ""
        return (
            f"{self.collective} #{self.sequence} of {self.program} step {self.step}{value}, "
            f"{self.nbytes} bytes of {np.dtype(self.dtype).name}"
        )


def disagreement(here: int, peer: int, expected: bytes, received: bytes) -> str | None:
    """None if the header ``received`` from ``peer`` is the one ``here`` expected, else the
    message every process raises with."""
    if received[:HEADER_BYTES] == expected:
        return None
    mine, theirs = Header.decode(expected), Header.decode(received[:HEADER_BYTES])
    return (
        f"process {here} is at {mine.describe()}; process {peer} sent "
        f"{theirs.describe()}. The processes run different programs, or call them in a "
        f"different order or with arguments of different shapes or dtypes: every process must "
        f"make the same calls in the same order."
    )
