"""RuCoS rules (Iazykova et al., 2021, Section 3.9): which passage entity fills @placeholder.

An entity is the set of its mentions (Example.candidates) with the same lemmas; it "occurs in
the query" when its lemmas occur there as a run, and its frequency is how often its lemmas
occur as a run in the passage text (lemmas standing in for the paper's stems). The answer is
written as the entity's most common mention.

Section 3.9 builds on the entities present in the query: the answer replaces the placeholder,
so an entity the query already names is unlikely to be it. The paper's wording ("predicted all
the entities present in the question", then "sort the remaining entities") is ambiguous; the
authors' later tool (ReCoRDHeuristics.remove_candidates_heuristic in
tatiana-iazykova/check_your_heuristic) removes the query's entities, and so do both rules:

1. the modification the paper kept: drop entities mentioned fewer than three times, take the
   most frequent of the rest;
2. the plain rule: the first-mentioned entity the query does not name (the paper picked one of
   them; we take the first so that a rule is a function of its example).

Here rueval follows the paper, not the authors' notebook (RSG_RuCoS.ipynb,
tatiana-iazykova/2020_HACK_RUSSIANSUPERGLUE), which draws its answer at random (np.random.choice
over indices from 1, so the first candidate is never drawn), takes a mention's "stem" as the
mention less its last one or two characters, matched as a substring of the query, and whose
frequency filter counts a list slice in the passage's tokens, which is always 0: no fixed rule
reproduces it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rueval.solvers.heuristics.base import Rule, count_runs, lemma_sequence, per_call_memo, prefetch_lemmas
from rueval.tasks import Example

MIN_MENTIONS = 3  # Section 3.9: "entities whose stems appeared less than three times were removed"


@dataclass(frozen=True)
class Entity:
    text: str  # its most common mention
    lemmas: tuple[str, ...]
    frequency: int  # occurrences of its lemmas in the passage


def entities_outside_query(example: Example) -> tuple[Entity, ...]:
    """The passage's entities that the query does not name, in order of first mention."""
    return _entities_outside(_query_words(example), example.text("passage"), example.candidates)


@per_call_memo  # once per query, however many rules read it
def _entities_outside(query_text: str, passage_text: str, candidates: tuple[str, ...]) -> tuple[Entity, ...]:
    query = lemma_sequence(query_text)
    entities = passage_entities(passage_text, candidates)
    return tuple(entity for entity in entities if not count_runs(query, entity.lemmas))


@per_call_memo  # once per passage, however many queries and rules read it
def passage_entities(passage_text: str, candidates: tuple[str, ...]) -> tuple[Entity, ...]:
    """The passage's entities in order of first mention."""
    passage = lemma_sequence(passage_text)
    mentions: dict[tuple[str, ...], dict[str, int]] = {}  # entity lemmas -> mention -> count
    for mention in candidates:
        key = lemma_sequence(mention)
        if key:
            counts = mentions.setdefault(key, {})
            counts[mention] = counts.get(mention, 0) + 1
    return tuple(
        # max keeps the first of equally common mentions, in order of first mention
        Entity(max(counts, key=counts.__getitem__), key, count_runs(passage, key))
        for key, counts in mentions.items()
    )


def _query_words(example: Example) -> str:
    return example.text("query").replace("@placeholder", " ")


def prefetch(examples: Iterable[Example]) -> None:
    """Lemmatise the distinct passages, queries and mentions in bulk: the bulk of the rules' work."""
    examples = list(examples)
    texts = [text for example in examples for text in (example.text("passage"), _query_words(example))]
    texts += [mention for example in examples for mention in example.candidates]
    prefetch_lemmas(texts, "lemmatising rucos passages and queries")


def frequent_entity_not_in_query(example: Example) -> str | None:
    """The most frequent entity the query does not name, among those occurring at least three times."""
    frequent = [entity for entity in entities_outside_query(example) if entity.frequency >= MIN_MENTIONS]
    return max(frequent, key=lambda entity: entity.frequency).text if frequent else None  # ties: first mentioned


def entity_not_in_query(example: Example) -> str | None:
    """The first-mentioned entity the query does not name."""
    remaining = entities_outside_query(example)
    return remaining[0].text if remaining else None


RULES = (
    Rule(
        "frequent_entity_not_in_query",
        "Entities present in the query removed; of the rest, those whose stems appear less than three times "
        "removed, the most frequent predicted",
        None,
        frequent_entity_not_in_query,
    ),
    Rule(
        "entity_not_in_query",
        "Entities present in the query removed; one of the remaining entities predicted",
        None,
        entity_not_in_query,
    ),
)
