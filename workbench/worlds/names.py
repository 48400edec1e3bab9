"""Pronounceable fictional names built from syllables, so no model can answer from pretraining.

rng = random.Random(0)
gen = NameGenerator(rng)
gen.unique(2)          # 'Velor'  (a fresh two-syllable name, never handed out before)
gen.person()           # ('Tamira Kolvesh', 'Kolvesh')
"""

from __future__ import annotations

import random

_ONSETS = (
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "gr",
    "kr",
    "st",
    "tr",
    "th",
    "sh",
    "ch",
    "vr",
)
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ei", "ou")
_CODAS = ("", "", "", "", "n", "r", "l", "s", "m", "th", "sh", "nd")


class NameGenerator:
    """Hands out capitalised syllable names; `unique` never repeats one within a generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, syllables: int) -> str:
        rng = self.rng
        parts = []
        for i in range(syllables):
            coda = rng.choice(_CODAS) if i == syllables - 1 else ""
            parts.append(rng.choice(_ONSETS) + rng.choice(_VOWELS) + coda)
        return "".join(parts).capitalize()

    def unique(self, syllables: int = 2, suffix: str = "") -> str:
        """A name not handed out before (tries longer names when a length runs dry)."""
        for attempt in range(1000):
            name = self.word(syllables + attempt // 50) + suffix
            if name.lower() not in self.used:
                self.used.add(name.lower())
                return name
        raise RuntimeError("name space exhausted")  # unreachable at the sizes worlds use

    def person(self) -> tuple[str, str]:
        """(full name, surname); the full name is unique, surnames may repeat."""
        while True:
            first = self.word(self.rng.choice((2, 2, 3)))
            last = self.word(self.rng.choice((2, 3)))
            full = f"{first} {last}"
            if full.lower() not in self.used:
                self.used.add(full.lower())
                return full, last
