"""Planted defects are rejected with the right reason; clean edits are kept; the answer never changes."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ToolError
from workbench.synth import (
    ClosedBookPolicy,
    Clue,
    Desc,
    DirectSolver,
    Span,
    Statement,
    Verifier,
    blur,
    fuzz,
    inject,
    parse_action,
    parse_question,
    render_question,
    seed_qa,
)
from workbench.synth.qa import from_json, to_json


def person_with_films(graph, site, n):
    """A person who directed exactly `n` films, and those films."""
    for e in site.world.entities:
        if e.type == "person":
            url = site.url_for(e.id)
            films = [f for f in graph.in_links(url) if f.key == "director"]
            if len(films) == n:
                return url, [f.subject_url for f in films]
    pytest.skip(f"no person with {n} films in this world")


@pytest.fixture()
def verifier(graph):
    never = ClosedBookPolicy(graph, known=0.0)  # remembers nothing: every edit is hard
    return Verifier(graph, DirectSolver(never, n=8), max_direct_accuracy=0.25)


def test_clean_injection_is_kept_and_the_answer_stays(graph, site, verifier):
    director, [film] = person_with_films(graph, site, 1)
    qa = seed_qa(graph, director, key="birthplace")  # What is the birthplace of <director>?
    edited = inject(graph, qa, graph.info(director).title, film, "director")
    assert edited.question == f"What is the birthplace of the director of {graph.info(film).title}?"
    assert edited.answer == qa.answer and edited.hops == 2 and film in edited.urls
    verdict = verifier.check(edited, edited.statements[1:])
    assert verdict.ok, verdict.summary()
    assert verdict.direct_accuracy == 0.0 and len(verdict.attempts) == 8


def test_planted_leak_is_rejected(graph, site, verifier):
    _, [film] = person_with_films(graph, site, 1)
    qa = seed_qa(graph, film, key="director")  # Who is the director of <film>?
    leak = dataclasses.replace(
        qa, question=f"Who is the director of {graph.info(film).title}, {qa.answer} or someone else?"
    )
    assert verifier.check(leak).reason == "leak"


def test_planted_unsupported_fact_is_rejected(graph, site, verifier):
    director, [film] = person_with_films(graph, site, 1)
    qa = seed_qa(graph, director, key="birthplace")
    edited = inject(graph, qa, graph.info(director).title, film, "director")
    year = graph.info(film).values("release year")[0].value
    false = Statement(f"{graph.info(film).title} was directed by {qa.answer} in {int(year) + 1}.", film)
    v = verifier.check(edited, [false])
    assert (v.ok, v.reason) == (False, "unsupported")
    wrong_page = dataclasses.replace(edited.statements[1], url=director)  # the right sentence, the wrong page
    assert verifier.check(edited, [wrong_page]).reason == "unsupported"


def test_planted_ambiguous_answer_is_rejected(graph, site, verifier):
    director, films = person_with_films(graph, site, 2)
    # "the film whose director is D" fits two films: the release year of which?
    qa = seed_qa(graph, films[0], key="release year")
    edited = inject(graph, qa, graph.info(films[0]).title, director, "director")
    v = verifier.check(edited, edited.statements[1:])
    assert v.reason == "ambiguous" and len(v.candidates) == 2
    # naming the year too would leak the answer; the other film's year would name the wrong film
    assert verifier.check(dataclasses.replace(edited, question="")).reason in ("ambiguous", "malformed")


def test_planted_too_easy_is_rejected(graph, site):
    director, [film] = person_with_films(graph, site, 1)
    qa = seed_qa(graph, director, key="birthplace")
    edited = inject(graph, qa, graph.info(director).title, film, "director")
    knows_all = ClosedBookPolicy(graph, known=1.0)
    v = Verifier(graph, DirectSolver(knows_all, n=8)).check(edited, edited.statements[1:])
    assert (v.reason, v.direct_accuracy) == ("too_easy", 1.0)


def test_fuzz_blurs_and_uniqueness_is_rechecked(graph, site, verifier):
    """A founding year blurred step by step: each step is kept while it still names one organisation."""
    for e in site.world.entities:
        if e.type != "organisation":
            continue
        url = site.url_for(e.id)
        qa = seed_qa(graph, url, key="headquarters")
        founder = graph.info(url).values("founder")[0].value_url
        qa = inject(graph, qa, e.name, founder, "founder", extra="founding year")
        if not verifier.check(qa, qa.statements[1:]).ok:
            continue
        seen = []
        for _ in range(5):  # a number blurs at most three times
            try:
                qa2 = fuzz(graph, qa, "founding year")
            except ToolError:
                break
            assert qa2.answer == qa.answer and qa2.hops == qa.hops
            v = verifier.check(qa2)
            seen.append(v.reason)
            if not v.ok:
                assert v.reason == "ambiguous"
                break
            qa = qa2
        if seen:
            assert (
                "the early" in qa.question
                or "the late" in qa.question
                or "s and" in qa.question
                or "between" in qa.question
                or "0s" in qa.question
            )
            return
    pytest.skip("no organisation to fuzz")


def test_malformed_direct_output_is_a_recorded_wrong_attempt(graph, site):
    from workbench.policies.scripted import ScriptedPolicy

    director, [film] = person_with_films(graph, site, 1)
    qa = inject(graph, seed_qa(graph, director, key="birthplace"), graph.info(director).title, film, "director")
    babble = ScriptedPolicy(lambda _c, _t: "I think it is \udcff somewhere", name="babble")
    v = Verifier(graph, DirectSolver(babble, n=3)).check(qa, qa.statements[1:])
    assert v.ok and v.direct_accuracy == 0.0
    assert all(a.flags == ["no_answer_tag"] and a.answer is None for a in v.attempts)


def test_a_failing_solver_model_is_a_verdict_not_an_exception(graph, site):
    class Broken:
        name, codec = "broken", ClosedBookPolicy(graph, known=0.0).codec

        async def generate(self, prompts, params):
            raise RuntimeError("server down")

    director, [film] = person_with_films(graph, site, 1)
    qa = inject(graph, seed_qa(graph, director, key="birthplace"), graph.info(director).title, film, "director")
    v = Verifier(graph, DirectSolver(Broken(), n=2)).check(qa, qa.statements[1:])
    assert (v.ok, v.reason) == (False, "solver_error") and "server down" in v.detail


def test_bad_edit_arguments_name_the_fix(graph, site):
    director, [film] = person_with_films(graph, site, 1)
    qa = seed_qa(graph, director, key="birthplace")
    with pytest.raises(ToolError, match="inject into one of"):
        inject(graph, qa, "Nobody Here", film, "director")
    with pytest.raises(ToolError, match="no fact 'capital'"):
        inject(graph, qa, graph.info(director).title, film, "capital")
    with pytest.raises(ToolError, match="no number"):
        fuzz(graph, qa, "birth year")


def test_blur_steps():
    assert blur("1952") == Span(1950, 1954) and blur(Span(1950, 1954)) == Span(1950, 1959)
    assert blur(Span(1950, 1959)) == Span(1940, 1959) and blur(Span(1940, 1959)) is None
    assert [s.text for s in (Span(1950, 1954), Span(1955, 1959), Span(1950, 1959), Span(1940, 1959))] == [
        "the early 1950s",
        "the late 1950s",
        "the 1950s",
        "between 1940 and 1959",
    ]


# -- the question grammar: render → parse is the identity (names read back without urls) --------
_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8)
_name = st.builds(lambda a, b: f"{a.capitalize()} {b.capitalize()}", _word, _word)
_key = st.sampled_from(["director", "release year", "birthplace", "founder", "country", "founding year"])
_leaf = st.one_of(
    _name,
    st.integers(1000, 2024).map(str),
    st.integers(190, 202).map(lambda d: Span(d * 10, d * 10 + 9)),
    st.integers(380, 404).map(lambda d: Span(d * 5, d * 5 + 4)),
)


def _tree(children):
    of = st.builds(lambda k, s: Desc(of_key=k, of_subject=s), _key, children)
    whose = st.builds(
        lambda kind, cl, last: Desc(kind=kind, clues=tuple(cl) + ((last,) if last else ())),
        st.sampled_from(["film", "person", "organisation", ""]),
        st.lists(st.builds(Clue, _key, _leaf), min_size=1, max_size=2),
        st.one_of(st.none(), st.builds(Clue, _key, children)),
    )
    return st.one_of(of, whose)


trees = st.recursive(_name, _tree, max_leaves=5)


@settings(max_examples=200, deadline=None)
@given(trees, st.sampled_from(["person", "city", ""]))
def test_render_parse_round_trip(tree, kind):
    text = render_question(tree, kind)
    parsed = parse_question(text)
    assert render_question(parsed, kind) == text
    assert from_json(to_json(tree)) == tree


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text):
    parse_question(text)
    parse_question(f"What is {text}?")
    assert parse_action(text) is None or parse_action(text)["action"] in ("inject", "fuzz", "exit")
    assert parse_action(f"<action>{text}</action>") is None or isinstance(
        parse_action(f"<action>{text}</action>"), dict
    )
