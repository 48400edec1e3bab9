"""Answer normalisation, answer extraction and the string metrics every QA reward is built from.

    normalize_answer("The  Eiffel-Tower!")          # 'eiffeltower' (SQuAD deletes punctuation)
    normalize_unicode("Ｔｈｅ Eiffel-Straße")        # 'eiffel strasse' (NFKC, casefold, P/S → space)
    exact_match("the Eiffel Tower", ["Eiffel Tower"])   # 1.0
    cover_em("It is in Paris, France", ["paris"])       # 1.0  (ZeroSearch's substring EM)
    token_f1("paris france", ["Paris"])                 # 0.667
    extract_answer("<answer> a </answer> … <answer> Paris </answer>")   # 'Paris'

Two normalisers, chosen by name (`normalizer="squad" | "unicode"`):
- `squad`: SQuAD/Search-R1: lowercase, drop ASCII punctuation, drop articles a/an/the, collapse
  whitespace. Non-ASCII text is kept as is.
- `unicode`: NFKC + casefold, drop every Unicode punctuation (P*) and symbol (S*) character, drop
  the articles, collapse whitespace; CJK ideographs, kana and hangul become one token each for F1.
  Different CJK answers never match (unlike L0's ASCII-only normaliser, which erased them).
Every metric takes the max over gold aliases; a missing prediction (None) scores 0.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_ASCII_PUNCT = set(string.punctuation)
_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af])")


def normalize_answer(text: str) -> str:
    """SQuAD / Search-R1 normalisation."""
    text = "".join(ch for ch in text.lower() if ch not in _ASCII_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_unicode(text: str) -> str:
    """Unicode-aware normalisation (keeps non-ASCII letters)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


NORMALIZERS: dict[str, Callable[[str], str]] = {"squad": normalize_answer,
                                                 "unicode": normalize_unicode}


def get_normalizer(name: str) -> Callable[[str], str]:
    try:
        return NORMALIZERS[name]
    except KeyError:
        from workbench.errors import ConfigError

        raise ConfigError(f"normalizer={name!r}; use one of {sorted(NORMALIZERS)}") from None


def tokens(normalized: str, normalizer: str = "squad") -> list[str]:
    """Whitespace tokens; the unicode normaliser also splits CJK characters apart."""
    if normalizer == "unicode":
        normalized = _CJK.sub(r" \1 ", normalized)
    return normalized.split()


def _golds(golds: str | Sequence[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else [str(g) for g in golds]


def exact_match(pred: str | None, golds: str | Sequence[str], normalizer: str = "squad") -> float:
    """1.0 if the normalised prediction equals any normalised gold."""
    if pred is None:
        return 0.0
    norm = get_normalizer(normalizer)
    p = norm(pred)
    return float(any(p == norm(g) for g in _golds(golds)))


def cover_em(pred: str | None, golds: str | Sequence[str], normalizer: str = "squad") -> float:
    """ZeroSearch's "EM": 1.0 if a normalised gold is a substring of the normalised prediction."""
    if pred is None:
        return 0.0
    norm = get_normalizer(normalizer)
    p = norm(pred)
    return float(any(norm(g) in p for g in _golds(golds) if norm(g)))


def token_f1(pred: str | None, golds: str | Sequence[str], normalizer: str = "squad") -> float:
    """SQuAD token F1 (Counter intersection), max over golds."""
    if pred is None:
        return 0.0
    norm = get_normalizer(normalizer)
    p = tokens(norm(pred), normalizer)
    best = 0.0
    for g in _golds(golds):
        gt = tokens(norm(g), normalizer)
        same = sum((Counter(p) & Counter(gt)).values())
        if same:
            prec, rec = same / len(p), same / len(gt)
            best = max(best, 2 * prec * rec / (prec + rec))
    return best


def _set_tokens(text: str) -> set[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in text)
    if _CJK.search(text):  # ASearcher's Chinese path: character sets
        return {ch for ch in text if not ch.isspace()}
    return set(_ARTICLES.sub(" ", text).split())


def set_f1(pred: str | None, golds: str | Sequence[str]) -> float:
    """ASearcher's F1: over token *sets*, punctuation → spaces, CJK text as character sets."""
    if pred is None:
        return 0.0
    p, best = _set_tokens(pred), 0.0
    for g in _golds(golds):
        gt = _set_tokens(g)
        same = len(p & gt)
        if same:
            prec, rec = same / len(p), same / len(gt)
            best = max(best, 2 * prec * rec / (prec + rec))
    return best


def has_answer(pred: str | None) -> float:
    """1.0 for a non-empty (after stripping) answer."""
    return float(pred is not None and bool(pred.strip()))


def extract_tag(text: str, tag: str) -> str | None:
    """The stripped content of the *last* `<tag>…</tag>` in `text`, or None."""
    found = re.findall(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return found[-1].strip() if found else None


def extract_answer(text: str) -> str | None:
    """The last `<answer>…</answer>`, or None when there is none."""
    return extract_tag(text, "answer")
