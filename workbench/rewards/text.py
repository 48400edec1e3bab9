"""Answer normalisation, answer extraction and the string metrics every QA reward is built from.

    normalize_answer("The  Eiffel-Tower!")          # 'eiffeltower' (SQuAD deletes punctuation)
    normalize_unicode("Ｔｈｅ Eiffel-Straße")        # 'eiffel strasse' (NFKC, casefold, P/S → space)
    exact_match("the Eiffel Tower", ["Eiffel Tower"])   # 1.0
    cover_em("It is in Paris, France", ["paris"])       # 1.0  (ZeroSearch's substring EM)
    token_f1("paris france", ["Paris"])                 # 0.667
    extract_answer("<answer> a </answer> … <answer> Paris </answer>")   # 'Paris'

Three normalisers, chosen by name (`normalizer="squad" | "unicode" | "l0"`):
- `squad`: SQuAD/Search-R1: lowercase, drop ASCII punctuation, drop articles a/an/the, collapse
  whitespace. Non-ASCII text is kept as is.
- `unicode`: NFKC + casefold, drop every Unicode punctuation (P*) and symbol (S*) character, drop
  the articles, collapse whitespace; CJK ideographs, kana and hangul become one token each for F1.
  Different CJK answers never match (unlike L0's ASCII-only normaliser, which erased them).
- `l0`: L0's rule: lowercase, delete every character but a-z, 0-9 and whitespace, collapse
  whitespace. It keeps the articles ("Beatles" ≠ "The Beatles") and deletes non-ASCII letters.
Every metric takes the max over gold aliases; a missing prediction (None) scores 0.

A gold that normalises to the empty string ("A", "the", any CJK gold under `l0`) would match
everything or nothing. The rule for such a gold, in EM, cover-EM and F1 alike: it scores 1 when
the prediction's light form equals the gold's (NFKC, casefold, whitespace collapsed), else 0.
So cover-EM is never below EM: `exact_match("A", ["a"]) == cover_em("A", ["a"]) == 1.0`.

F1's yes/no/noanswer rule (HotpotQA, FlashRAG; `yes_no_rule=True`): when either normalised side
is "yes", "no" or "noanswer" and the two differ, F1 is 0.
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


_NON_L0 = re.compile(r"[^a-z0-9\s]")


def normalize_l0(text: str) -> str:
    """L0's normalisation: lowercase, keep only a-z, 0-9 and whitespace, collapse whitespace."""
    return " ".join(_NON_L0.sub("", text.lower()).split())


def light_form(text: str) -> str:
    """NFKC, casefold, whitespace collapsed: how a gold that normalises to "" is compared."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


NORMALIZERS: dict[str, Callable[[str], str]] = {
    "squad": normalize_answer,
    "unicode": normalize_unicode,
    "l0": normalize_l0,
}


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
    return float(
        any(p == ng if ng else light_form(pred) == light_form(g) for g, ng in ((g, norm(g)) for g in _golds(golds)))
    )


def cover_em(pred: str | None, golds: str | Sequence[str], normalizer: str = "squad") -> float:
    """ZeroSearch's "EM": 1.0 if a normalised gold is a substring of the normalised prediction."""
    if pred is None:
        return 0.0
    norm = get_normalizer(normalizer)
    p = norm(pred)
    return float(
        any(ng in p if ng else light_form(pred) == light_form(g) for g, ng in ((g, norm(g)) for g in _golds(golds)))
    )


_YES_NO = ("yes", "no", "noanswer")


def token_f1(
    pred: str | None, golds: str | Sequence[str], normalizer: str = "squad", *, yes_no_rule: bool = False
) -> float:
    """SQuAD token F1 (Counter intersection), max over golds; `yes_no_rule` adds HotpotQA's."""
    if pred is None:
        return 0.0
    norm = get_normalizer(normalizer)
    np_ = norm(pred)
    p = tokens(np_, normalizer)
    best = 0.0
    for g in _golds(golds):
        ng = norm(g)
        if not ng:
            best = max(best, float(light_form(pred) == light_form(g)))
            continue
        if yes_no_rule and (np_ in _YES_NO or ng in _YES_NO) and np_ != ng:
            continue
        gt = tokens(ng, normalizer)
        same = sum((Counter(p) & Counter(gt)).values())
        if same:
            prec, rec = same / len(p), same / len(gt)
            best = max(best, 2 * prec * rec / (prec + rec))
    return best


# -- ASearcher's set-F1 (AReaL/ASearcher/utils/rewards.py: f1_score, normalize_text, bool_mapping)
_ASEARCHER_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF))
_ASEARCHER_DROP = set("0123456789，。 ,.-")


def bool_mapping(text: str) -> str:
    """ASearcher: exactly "True" → "yes", exactly "False" → "no"."""
    return {"True": "yes", "False": "no"}.get(text, text)


def normalize_asearcher(text: str) -> str:
    """ASearcher's `normalize_text`: ASCII punctuation → space, collapse whitespace, strip, lower
    (articles are kept)."""
    text = "".join(" " if ch in _ASCII_PUNCT else ch for ch in text)
    return " ".join(text.split()).lower()


def _has_cjk(text: str) -> bool:
    return any(lo <= ord(ch) <= hi for ch in text for lo, hi in _ASEARCHER_CJK)


def _cjk_tokens(text: str) -> set[str]:
    """Characters as tokens, runs of digits as one token each; digits, spaces, ,.-，。 dropped."""
    runs: list[str] = []
    for i, ch in enumerate(text):
        if ch.isdigit():
            if i > 0 and text[i - 1].isdigit():
                runs[-1] += ch
            else:
                runs.append(ch)
    return {ch for ch in text if ch not in _ASEARCHER_DROP} | set(runs)


def _set_f1_one(pred: str, gold: str) -> float:
    p, g = normalize_asearcher(bool_mapping(pred)), normalize_asearcher(bool_mapping(gold))
    if _has_cjk(g):  # the gold decides the tokenisation of both sides
        pt, gt = _cjk_tokens(p), _cjk_tokens(g)
    else:
        pt, gt = set(p.split()), set(g.split())
    same = len(pt & gt)
    if not pt or not gt or not same:
        return 0.0
    prec, rec = same / len(pt), same / len(gt)
    return 2 * prec * rec / (prec + rec)


def set_f1(pred: str | None, golds: str | Sequence[str]) -> float:
    """ASearcher's F1 over token *sets*, max over golds: `bool_mapping`, punctuation → spaces,
    articles kept; when the gold has CJK ideographs both sides become character sets plus digit
    runs."""
    if pred is None:
        return 0.0
    return max((_set_f1_one(pred, g) for g in _golds(golds)), default=0.0)


def asearcher_em(pred: str | None, golds: str | Sequence[str]) -> float:
    """ASearcher's `em_check`: SQuAD normalisation after `bool_mapping`, any gold."""
    if pred is None:
        return 0.0
    p = normalize_answer(bool_mapping(pred))
    return float(any(p == normalize_answer(bool_mapping(g)) for g in _golds(golds)))


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
