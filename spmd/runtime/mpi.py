"""The MPI transport: buffers between processes with mpi4py's non-blocking buffer calls.

Every wait has a deadline (``collective_timeout``): a peer that stalls or died makes this
process raise DistributedError naming it, never hang. Buffers travel as raw bytes, so any
dtype crosses and nothing is pickled. Program agreement compares a digest first and, only
on a mismatch, the texts, so the error can show the first difference.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

import numpy as np
from mpi4py import MPI

from spmd.config import config
from spmd.errors import DistributedError
from spmd.runtime.messages import (
    HEADER_BYTES,
    Speaker,
    current_speaker,
    disagreement,
    subject,
)

_DATA, _DIGEST, _LENGTH, _TEXT, _HEADER, _PACKED = 11, 12, 13, 14, 15, 16  # never mix
SMALL_BYTES = 16384  # a message this small travels in one piece with its header
_CHECK_AFTER = 0.25  # seconds of waiting after which headers are checked for a disagreement
_BUSY_SECONDS = 0.02  # poll without pause this long (MPI progresses only inside its calls)


def _bytes(buffer: np.ndarray):
    return [buffer.reshape(-1).view(np.uint8), MPI.BYTE]


class Traffic:
    """What this process sent: messages, bytes of data, and bytes of headers and of the
    agreement checks (``MpiTransport.sent``; the bytes benchmark reads it)."""

    def __init__(self) -> None:
        self.messages = 0
        self.data_bytes = 0
        self.overhead_bytes = 0

    def count(self, data: int, overhead: int) -> None:
        self.messages += 1
        self.data_bytes += data
        self.overhead_bytes += overhead


class MpiTransport:
    """Point-to-point messages among the processes of an MPI communicator."""

    def __init__(self, comm) -> None:
        self.comm = comm.Dup()  # our messages never match the user's
        self.index = self.comm.Get_rank()
        self.count = self.comm.Get_size()
        self._sent = [0] * self.count  # messages sent to each process, and received from it
        self._received = [0] * self.count
        self._landings: list[bytearray] = []  # where small messages land; one exchange at a time
        self.sent = Traffic()

    def exchange(
        self,
        sends: list[tuple[int, np.ndarray]],
        recvs: list[tuple[int, np.ndarray]],
        what: str,
    ) -> None:
        """Send each ``(process, buffer)`` of ``sends`` and fill each of ``recvs``, every
        message behind a header that the receiver checks (spmd/runtime/messages.py). A small
        message travels with its header in one message; a large one right after it."""
        about = subject(current_speaker(), what)
        requests, peers, keep = [], [], []
        for peer, buffer in sends:  # first: a peer that waits gets its messages soonest
            header = about.header(self._sent[peer], buffer)
            self._sent[peer] += 1
            self.sent.count(buffer.nbytes, HEADER_BYTES)
            if buffer.nbytes <= SMALL_BYTES:
                packed = header + buffer.tobytes()
                keep.append(packed)  # alive until sent
                requests.append(self.comm.Isend([packed, MPI.BYTE], dest=peer, tag=_PACKED))
                peers.append(peer)
                continue
            buffer = np.ascontiguousarray(buffer)
            keep += (buffer, header)
            requests.append(self.comm.Isend([header, MPI.BYTE], dest=peer, tag=_HEADER))
            requests.append(self.comm.Isend(_bytes(buffer), dest=peer, tag=_DATA))
            peers += (peer, peer)
        posted = []  # (request, peer, landing, sequence, buffer) per message received
        for peer, buffer in recvs:
            if buffer.nbytes <= SMALL_BYTES:  # room for any small message: never truncated
                landing, tag = self._landing(len(posted)), _PACKED
            else:
                landing, tag = bytearray(HEADER_BYTES), _HEADER
                requests.append(self.comm.Irecv(_bytes(buffer), source=peer, tag=_DATA))
                peers.append(peer)
            request = self.comm.Irecv([landing, MPI.BYTE], source=peer, tag=tag)
            posted.append((request, peer, landing, self._received[peer], buffer))
            self._received[peer] += 1
            requests.append(request)
            peers.append(peer)
        incoming = [  # what each header should say, made while the messages travel
            (request, peer, landing, about.header(sequence, buffer), buffer)
            for request, peer, landing, sequence, buffer in posted
        ]
        try:
            self._wait(requests, peers, what, incoming)
        except DistributedError:
            self._landings = []  # messages may still land in these: never reuse them
            raise
        for _, peer, landing, expected, buffer in incoming:
            if not landing.startswith(expected):
                raise DistributedError(disagreement(self.index, peer, expected, bytes(landing)))
            if 0 < buffer.nbytes <= SMALL_BYTES:
                buffer.data.cast("B")[:] = landing[HEADER_BYTES : HEADER_BYTES + buffer.nbytes]

    def _landing(self, position: int) -> bytearray:
        """The ``position``-th buffer small messages land in, made once and reused."""
        while len(self._landings) <= position:
            self._landings.append(bytearray(HEADER_BYTES + SMALL_BYTES))
        return self._landings[position]

    def _raw_exchange(self, sends, recvs, what: str, tag: int) -> None:
        """Messages without headers (those of the agreement check itself)."""
        requests = [self.comm.Irecv(_bytes(b), source=p, tag=tag) for p, b in recvs]
        requests += [self.comm.Isend(_bytes(b), dest=p, tag=tag) for p, b in sends]
        for _, b in sends:
            self.sent.count(0, b.nbytes)
        self._wait(requests, [p for p, _ in recvs] + [p for p, _ in sends], what)

    def _check(self, incoming: list, wait: float = 0.0) -> None:
        """Raise DistributedError if a header that arrived (within ``wait`` seconds) is not
        the one expected, or if a peer whose header is late sent one of the other form (a
        large message where a small one was expected, or the reverse)."""
        deadline = time.monotonic() + wait
        for request, peer, raw, expected, _ in incoming:
            while not request.Test() and time.monotonic() < deadline:
                time.sleep(1e-4)
            received = bytes(raw) if request.Test() else self._unexpected(peer, len(raw))
            if received is not None and received[:HEADER_BYTES] != expected:
                raise DistributedError(disagreement(self.index, peer, expected, received))

    def _unexpected(self, peer: int, size: int) -> bytes | None:
        """A message ``peer`` sent in the other form than the one of ``size`` bytes expected
        (a large message where a small one was expected, or the reverse), if one waits."""
        other = _HEADER if size > HEADER_BYTES else _PACKED
        status = MPI.Status()
        if not self.comm.Iprobe(source=peer, tag=other, status=status):
            return None
        raw = np.empty(max(status.Get_count(MPI.BYTE), HEADER_BYTES), np.uint8)
        self.comm.Recv([raw, MPI.BYTE], source=peer, tag=other)
        return raw.tobytes()

    def _wait(self, requests: list, peers: list[int], what: str, incoming=None) -> None:
        """Wait for ``requests``. The headers of ``incoming`` messages are checked for a
        disagreement that explains a delay: a while after the start, and on an MPI error."""
        try:
            if MPI.Request.Testall(requests):  # small messages: often done at once
                return
            timeout = config.collective_timeout
            start = time.monotonic()
            checked = _CHECK_AFTER
            while not MPI.Request.Testall(requests):
                elapsed = time.monotonic() - start
                if incoming is not None and elapsed > checked:
                    self._check(incoming)
                    checked = elapsed + _CHECK_AFTER
                if elapsed > timeout:
                    self._give_up(requests, peers, what, timeout)
                if elapsed > _BUSY_SECONDS:
                    time.sleep(5e-5)
        except MPI.Exception as error:
            if incoming is not None:
                self._check(incoming, wait=min(config.collective_timeout, 5.0))
            raise DistributedError(
                f"process {self.index}: MPI failed during {what} "
                f"({_where(current_speaker())}): {error.Get_error_string()}."
            ) from None

    def _give_up(self, requests: list, peers: list[int], what: str, timeout: float) -> None:
        late = sorted({peer for peer, r in zip(peers, requests, strict=True) if not r.Test()})
        for r in requests:
            if not r.Test():
                r.Cancel()
        names = ", ".join(map(str, late))
        raise DistributedError(
            f"process {self.index}: process{'es' if len(late) > 1 else ''} {names} did not take "
            f"part in {what} within {timeout:g} s ({_where(current_speaker())}): "
            f"{'they' if len(late) > 1 else 'it'} stalled, died, or "
            f"run{'' if len(late) > 1 else 's'} a different program. Raise the limit "
            f"with spmd.config.update('collective_timeout', seconds) or SPMD_COLLECTIVE_TIMEOUT "
            f"if the work is just slow."
        )

    def agree(self, text: str, processes: Sequence[int], what: str) -> None:
        processes = list(processes)
        peers = [p for p in processes if p != self.index]
        if not peers or self.index not in processes:
            return
        encoded = text.encode()
        digest = np.frombuffer(hashlib.sha256(encoded).digest(), np.uint8)
        theirs = {p: np.empty_like(digest) for p in peers}
        self._raw_exchange(
            [(p, digest) for p in peers], list(theirs.items()), f"agreeing on {what}", _DIGEST
        )
        if all(np.array_equal(digest, d) for d in theirs.values()):
            return
        mine = np.frombuffer(encoded, np.uint8)
        lengths = {p: np.empty(1, np.int64) for p in peers}
        length = np.array([mine.size], np.int64)
        self._raw_exchange([(p, length) for p in peers], list(lengths.items()), what, _LENGTH)
        texts = {p: np.empty(int(lengths[p][0]), np.uint8) for p in peers}
        self._raw_exchange([(p, mine) for p in peers], list(texts.items()), what, _TEXT)
        every = {p: texts[p].tobytes().decode() for p in peers}
        every[self.index] = text
        raise DistributedError(_disagreement(every, processes, what))


def _disagreement(texts: dict[int, str], processes: list[int], what: str) -> str:
    """The message every process raises: which processes hold which text, and the first line
    where the first two versions differ."""
    versions: dict[str, list[int]] = {}
    for p in processes:
        versions.setdefault(texts[p], []).append(p)
    (a, first), (b, second) = list(versions.items())[:2]
    lines_a, lines_b = a.splitlines(), b.splitlines()
    line = next(
        (i for i, (x, y) in enumerate(zip(lines_a, lines_b, strict=False)) if x != y),
        min(len(lines_a), len(lines_b)),
    )
    shown_a = lines_a[line] if line < len(lines_a) else "(end)"
    shown_b = lines_b[line] if line < len(lines_b) else "(end)"
    groups = "; ".join(
        f"process{'es' if len(ps) > 1 else ''} {', '.join(map(str, ps))}"
        for ps in versions.values()
    )
    return (
        f"the processes disagree on {what} ({groups}). First difference, line {line + 1}:\n"
        f"  process {first[0]}: {shown_a.strip()}\n"
        f"  process {second[0]}: {shown_b.strip()}\n"
        f"Every process must call the same functions with arguments of the same shapes, "
        f"dtypes and shardings, in the same order."
    )


def _where(speaker: Speaker) -> str:
    value = f" on {speaker.value}" if speaker.value else ""
    return f"in {speaker.name}, step {speaker.step}{value}"
