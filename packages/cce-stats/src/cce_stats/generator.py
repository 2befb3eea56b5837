"""SplitMix64, the one pseudo-random generator behind every resampling test.

Why it exists: a randomization p-value or a bootstrap interval must come out as
the same bytes on every run and every machine, so the generator cannot be the
platform's or a library's (whose streams may change between versions). SplitMix64
(Steele, Lea & Flood, OOPSLA 2014; the seeding generator of xoshiro) is a few
integer operations on a 64-bit counter, written out here in full, so its stream is
defined by this file alone (docs/statistics.md#generator).
"""

from __future__ import annotations

__all__ = ["DEFAULT_SEED", "SplitMix64"]

_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB

DEFAULT_SEED = 0x243F6A8885A308D3
"""The fixed seed of every resampling test: the first 64 bits of pi's fraction."""


class SplitMix64:
    """A SplitMix64 stream: `next_u64` returns the next 64-bit output.

    The state is a 64-bit counter advanced by the golden-ratio gamma; each output
    is the counter passed through two xor-shift-multiply rounds. The stream for a
    seed is the same on every platform because only exact integer arithmetic
    modulo 2^64 is involved.
    """

    __slots__ = ("_state",)

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self._state = seed & _MASK64

    def next_u64(self) -> int:
        """Advance the counter and return the next output in [0, 2^64)."""
        self._state = (self._state + _GOLDEN_GAMMA) & _MASK64
        z = self._state
        z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
        z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
        return z ^ (z >> 31)

    def indexes_below(self, bound: int, count: int) -> list[int]:
        """Return `count` integers uniform on [0, bound), for 1 <= bound < 2^32.

        Each 64-bit output yields two 32-bit halves (low half first); a half h maps
        to (h * bound) >> 32 unless its low 32 bits fall below 2^32 mod bound, in
        which case it is rejected and the next half is used (Lemire's method), so
        every index is exactly uniform.
        """
        if not 1 <= bound <= _MASK32:
            raise ValueError(f"bound must be in [1, 2^32), got {bound!r}")
        threshold = ((1 << 32) - bound) % bound
        out: list[int] = []
        append = out.append
        # The counter update and both mixing rounds are inlined: this loop is the cost
        # of a bootstrap, about a microsecond per 64-bit output.
        state = self._state
        while len(out) < count:
            for _ in range((count - len(out) + 1) // 2):
                state = (state + _GOLDEN_GAMMA) & _MASK64
                z = ((state ^ (state >> 30)) * _MIX1) & _MASK64
                z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
                z ^= z >> 31
                product = (z & _MASK32) * bound
                if (product & _MASK32) >= threshold:
                    append(product >> 32)
                product = (z >> 32) * bound
                if (product & _MASK32) >= threshold:
                    append(product >> 32)
        self._state = state
        del out[count:]
        return out
