"""The MuSiQue evaluation set: the 100-question subset over its fixed 1,890-passage corpus, plus unanswerable
questions.

The vault is exactly the one ``eval/musique.py`` writes (``passages/{i:04d}-{slug}.md``, content
``# {title}\\n\\n{text}\\n``, same digest), so a home built by either harness is reused by the other. A
question's gold is its distinct supporting paragraphs as vault files; its group is the hop type (``2hop``,
``3hop1``, ``3hop2``, ``4hop1``, ``4hop3``).

Added to them: 25 hand-written, Wikipedia-style questions about subjects the corpus does not cover (group
``unanswerable``, gold ``()``), to measure abstention. Each names the distinctive words its subject would be
found by; :func:`build_set` refuses to build when any of them occurs as a word in any passage (title or text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from eval.musique import (
    DEFAULT_DATA,
    gold_documents,
    load_corpus,
    load_questions,
    passage_index,
    vault_digest,
    write_vault,
)
from eval.retrieval_metrics import hop_type
from eval.sets.base import Question, RetrievalSet

NAME = "musique"
UNANSWERABLE_GROUP = "unanswerable"

# (question, distinctive words that must not occur in the corpus)
UNANSWERABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Which salamander native to the lakes of Xochimilco can regrow its limbs?", ("salamander", "xochimilco")),
    ("What gas does kombucha release during fermentation?", ("kombucha", "fermentation")),
    ("Which enzyme makes fireflies bioluminescent?", ("fireflies", "bioluminescent", "enzyme")),
    ("How heavy was the counterweight of the largest medieval trebuchet?", ("counterweight", "trebuchet")),
    ("Which Japanese publisher, Nikoli, gave the sudoku puzzle its name?", ("nikoli", "sudoku")),
    ("Why do wombats produce cube-shaped droppings?", ("wombats", "droppings")),
    ("What is the spiral tusk of the narwhal made of?", ("narwhal", "tusk")),
    ("In which year did the reactor at Chernobyl explode?", ("chernobyl",)),
    ("Which two kinds of organism live together in a lichen?", ("lichen",)),
    ("Who built the first practical hovercraft?", ("hovercraft",)),
    ("From which quarry were the sarsen stones of Stonehenge brought?", ("sarsen", "stonehenge", "quarry")),
    ("Which animal is the closest living relative of the okapi?", ("okapi",)),
    ("Which Hungarian architect invented the Rubik's Cube?", ("rubik",)),
    ("Where on its body does the male platypus carry its spurs?", ("platypus",)),
    ("Which mathematician introduced the Fibonacci sequence to Europe?", ("fibonacci",)),
    ("When was the last dodo seen alive?", ("dodo",)),
    ("Which part of the crocus flower is harvested as saffron?", ("crocus", "saffron")),
    ("Who created the constructed language Esperanto?", ("esperanto",)),
    ("How old is the oldest known baobab tree?", ("baobab",)),
    ("How many hours a day do koalas sleep after eating eucalyptus leaves?", ("koalas", "eucalyptus")),
    ("How tall is Mount Kilimanjaro?", ("kilimanjaro",)),
    ("What is a traditional didgeridoo made from?", ("didgeridoo",)),
    ("Which cipher did Alan Turing's team break at Bletchley Park?", ("turing", "bletchley")),
    ("In which year did the Dutch tulip mania collapse?", ("tulip",)),
    ("Who is the sushi chef of the documentary Jiro Dreams of Sushi?", ("sushi", "jiro")),
)

_WORD = re.compile(r"\w+")


def corpus_words(corpus: Iterable[Mapping[str, str]]) -> set[str]:
    """Every lower-cased word (``\\w+`` run) of the passages' titles and texts."""
    words: set[str] = set()
    for passage in corpus:
        words.update(_WORD.findall(f"{passage['title']} {passage['text']}".lower()))
    return words


def unanswerable_violations(corpus: Iterable[Mapping[str, str]]) -> list[str]:
    """Distinctive words of the unanswerable questions that do occur in the corpus (should be none), and
    distinctive words the question itself does not contain (a typo in the list)."""
    words = corpus_words(corpus)
    problems = []
    for index, (question, distinctive) in enumerate(UNANSWERABLE, start=1):
        asked = set(_WORD.findall(question.lower()))
        for word in distinctive:
            if word.lower() not in asked:
                problems.append(f"unanswerable {index}: {word!r} is not a word of {question!r}")
            if word.lower() in words:
                problems.append(f"unanswerable {index}: {word!r} occurs in the corpus")
    return problems


def unanswerable_questions() -> list[Question]:
    return [
        Question(id=f"{UNANSWERABLE_GROUP}__{index:02d}", question=question, gold=(), group=UNANSWERABLE_GROUP)
        for index, (question, _) in enumerate(UNANSWERABLE, start=1)
    ]


def musique_questions(raw: Sequence[Mapping], index: Mapping[tuple[str, str], str]) -> list[Question]:
    return [
        Question(id=q["id"], question=q["question"], gold=tuple(gold_documents(q, index)), group=hop_type(q["id"]))
        for q in raw
    ]


def build_set(vault: Path, seed: int = 0, data: Path = DEFAULT_DATA) -> RetrievalSet:
    """Write the corpus as a vault under ``vault`` and return the set. The questions are fixed: ``seed`` is
    accepted for the common interface and changes nothing."""
    del seed
    corpus = load_corpus(data)
    problems = unanswerable_violations(corpus)
    if problems:
        raise ValueError("the unanswerable questions are not unanswerable: " + "; ".join(problems[:5]))
    plan = write_vault(corpus, vault)
    questions = musique_questions(load_questions(data), passage_index(plan)) + unanswerable_questions()
    return RetrievalSet(
        name=NAME,
        vault=vault,
        questions=tuple(questions),
        digest=vault_digest(plan),
        description=f"MuSiQue: {len(plan):,} Wikipedia passages, {len(questions) - len(UNANSWERABLE)} multi-hop "
        f"questions (group = hop type) and {len(UNANSWERABLE)} unanswerable ones",
    )
