"""The headers of cross-process messages (spmd/runtime/messages.py): what they say, and the
error a receiver raises when one is not what it expected."""

from __future__ import annotations

import numpy as np

from spmd.runtime.messages import (
    HEADER_BYTES,
    Header,
    Speaker,
    current_speaker,
    disagreement,
    fingerprint,
    speaking_for,
    subject,
)


def test_a_header_says_what_its_message_is():
    speaker = Speaker("jit(f)", fingerprint("program text"), 3, "psum", "f32[4,8]")
    raw = subject(speaker, "all-reduce (sum)").header(7, np.ones((4, 8), np.float32))
    assert len(raw) == HEADER_BYTES
    header = Header.decode(raw)
    assert header == Header(speaker.fingerprint, 3, 7, 128, "jit(f)",
                            "all-reduce (sum) for psum", "f32[4,8]", "<f4")  # fmt: skip


def test_a_different_header_names_both_processes_and_both_sides():
    mine = Speaker("jit(f)", fingerprint("f"), 2, "psum", "f32[4,8]")
    theirs = Speaker("jit(g)", fingerprint("g"), 0, "all_gather", "f32[2,8]")
    expected = subject(mine, "all-reduce (sum)").header(3, np.ones((4, 8), np.float32))
    received = subject(theirs, "block exchange").header(3, np.ones((2, 8), np.float32))
    assert disagreement(0, 1, expected, expected) is None
    text = disagreement(0, 1, expected, received)
    assert text.startswith(
        "process 0 is at all-reduce (sum) for psum #3 of jit(f) step 2 (f32[4,8]), 128 bytes of "
        "float32; process 1 sent block exchange for all_gather #3 of jit(g) step 0 (f32[2,8]), "
        "64 bytes of float32."
    ), text


def test_only_the_sequence_number_or_the_dtype_may_differ_and_still_be_caught():
    speaker = Speaker("jit(f)", 1, 0, "psum", "f32[2]")
    about = subject(speaker, "all-reduce (sum)")
    assert disagreement(0, 1, about.header(4, np.ones(2)), about.header(5, np.ones(2)))
    ints, floats = np.ones(2, np.int64), np.ones(2, np.float64)  # same byte count
    assert "int64" in disagreement(0, 1, about.header(0, ints), about.header(0, floats))


def test_long_names_are_cut_to_fit_the_header():
    speaker = Speaker("jit(" + "f" * 500 + ")", 0, 0, "x" * 300, "f32[" + "9," * 100 + "]")
    raw = subject(speaker, "block exchange").header(0, np.ones(1))
    assert len(raw) == HEADER_BYTES and Header.decode(raw).program.startswith("jit(fff")


def test_speaking_for_sets_the_speaker_for_a_block_only():
    before = current_speaker()
    speaker = Speaker("jit(f)")
    with speaking_for(speaker):
        assert current_speaker() is speaker
    assert current_speaker() is before
