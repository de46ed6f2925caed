"""Rule-based constraints that keep a perturbed example's gold answer valid (TAPE, Appendix D, Table 4).

A constraint names character spans of the input fields that perturbations must leave untouched
(they skip every token overlapping one), and may repair annotations that point into the text
(MultiQ answer offsets, RUSSE target-word offsets, RWSD word indices) once the text has changed.
``check`` refuses malformed annotations up front: a constraint that cannot read them would
protect nothing and let the gold answer be perturbed away silently.
"""

from __future__ import annotations

import re
from abc import ABC
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from rueval.core.errors import RuevalError
from rueval.core.text import lemma, parse, words
from rueval.robustness.spans import Span, find_all, is_word, tighten, token_spans
from rueval.tasks import Example
from rueval.tasks.offsets import word_span

Protected = dict[str, list[Span]]  # field -> spans in the field's original text
Moved = Mapping[str, Mapping[Span, Span]]  # field -> protected span -> where it is in the perturbed text
Problem = tuple[str, str]  # (field, what is wrong with it)


class Constraint(ABC):
    """Spans a perturbation must keep (``protect``) and annotations to update after it (``repair``)."""

    name: str

    def check(self, example: Example) -> Problem | None:
        """What is malformed in the annotations this constraint reads, if anything."""
        return None

    def prepare(self, examples: Sequence[Example], fields: Sequence[str]) -> None:
        """Batch work ahead of ``protect`` calls on these examples (natasha runs ~10x faster on batches)."""

    def protect(self, example: Example, fields: Sequence[str]) -> Protected:
        """Character spans of the given text fields that must not change."""
        return {}

    def repair(self, example: Example, perturbed: dict[str, Any], moved: Moved) -> None:
        """Update, in ``perturbed`` (a copy of the example's fields), what points into changed text."""


# --- natasha: loaded once, on first use, run on batches -----------------------------------------


@cache
def _natasha() -> dict[str, Any]:
    """natasha's segmenter, NER tagger, morphology tagger and syntax parser (about 1 s to load)."""
    try:
        from natasha import NewsEmbedding, NewsMorphTagger, NewsNERTagger, NewsSyntaxParser, Segmenter
    except ImportError:
        raise RuevalError(
            "the robustness constraints need natasha, which is not installed: pip install 'rueval[robustness]'"
        ) from None

    embedding = NewsEmbedding()
    return {
        "segmenter": Segmenter(),
        "ner": NewsNERTagger(embedding),
        "morph": NewsMorphTagger(embedding),
        "syntax": NewsSyntaxParser(embedding),
    }


class _PerText:
    """A batched analysis of texts, remembered per text: prepare() analyses a batch at once, later
    lookups of one text reuse it (MuSeRC and RuCoS repeat a passage across many examples)."""

    def __init__(self, analyse: Callable[[list[str]], list[Any]], size: int = 50_000):
        self.analyse, self.size = analyse, size
        self.done: dict[str, Any] = {}

    def prepare(self, texts: Sequence[str]) -> None:
        missing = list(dict.fromkeys(text for text in texts if text not in self.done))
        if len(self.done) + len(missing) > self.size:
            self.done.clear()
        self.done.update(zip(missing, self.analyse(missing)) if missing else ())

    def __call__(self, text: str) -> Any:
        self.prepare([text])
        return self.done[text]


def _entities(texts: list[str]) -> list[tuple[Span, ...]]:
    filled = [text for text in texts if text.strip()]  # slovnet fails on blank text
    found = dict(zip(filled, _natasha()["ner"].map(filled)))
    return [tuple((span.start, span.stop) for span in found[t].spans) if t in found else () for t in texts]


@dataclass(frozen=True)
class _Word:
    """A word of natasha's dependency parse: its span, part of speech, and its head's id."""

    start: int
    stop: int
    pos: str
    id: tuple[int, str]
    head: tuple[int, str]


def _dependencies(texts: list[str]) -> list[list[_Word]]:
    tools = _natasha()  # first: a missing natasha is reported before its Doc is imported
    from natasha import Doc

    docs = []
    for text in texts:
        doc = Doc(text)
        doc.segment(tools["segmenter"])
        docs.append(doc)
    sentences = [(d, sentence) for d, doc in enumerate(docs) for sentence in doc.sents]
    chunk = [[token.text for token in sentence.tokens] for _, sentence in sentences]
    morph, syntax = tools["morph"].map(chunk), tools["syntax"].map(chunk)
    words: list[list[_Word]] = [[] for _ in docs]
    for number, ((d, sentence), tags, links) in enumerate(zip(sentences, morph, syntax)):
        words[d] += [
            _Word(token.start, token.stop, tag.pos, (number, link.id), (number, link.head_id))
            for token, tag, link in zip(sentence.tokens, tags.tokens, links.tokens)
        ]
    return words


entity_spans = _PerText(_entities)  # natasha NER: PER, LOC, ORG spans
dependency_parse = _PerText(_dependencies)


class NamedEntities(Constraint):
    """Every named entity natasha's NER finds in the perturbed fields (QA answers depend on them)."""

    name = "named_entities"

    def prepare(self, examples: Sequence[Example], fields: Sequence[str]) -> None:
        entity_spans.prepare([e.fields[f] for e in examples for f in fields])

    def protect(self, example: Example, fields: Sequence[str]) -> Protected:
        return {f: list(entity_spans(example.fields[f])) for f in fields}


# --- CheGeKa ----------------------------------------------------------------------------------

_UPPER_WORD = r"[А-ЯЁA-Z][А-ЯЁA-Z-]*[А-ЯЁA-Z]"
_JEOPARDY_PATTERNS = (
    re.compile(rf"\b{_UPPER_WORD}(?:\s+{_UPPER_WORD})*\b"),  # ЭТОТ ГОРОД, В ЭТОМ ГОДУ, ИХ
    re.compile(r"(?<!\w)[XХ](?!\w)"),  # X, Latin or Cyrillic
    re.compile(r"\([^()]*\)"),  # named entities in parentheses
    re.compile(r"«[^«»]*»|\"[^\"]*\"|„[^„“]*“"),  # quoted clues
)


class Jeopardy(Constraint):
    """CheGeKa: the clue the answer replaces, as TAPE's framework finds it: upper-cased words (ЭТОТ
    ГОРОД), a pointing word (a third-person pronoun, этот, это, такой, икс: его, этом, ...) or an
    upper-cased word followed by any adjectives and one or more nouns (его знаменитая картина,
    ЭТОТ известный город), 'X', parenthesised named entities and quoted clues."""

    name = "jeopardy"

    def protect(self, example: Example, fields: Sequence[str]) -> Protected:
        return {f: _jeopardy_spans(example.fields[f]) for f in fields}


_POINTING = frozenset(
    {"он", "она", "оно", "они", "этот", "это", "такой", "икс"}
)  # as rueval.core.text.lemma gives them


def _jeopardy_spans(text: str) -> list[Span]:
    spans = [match.span() for pattern in _JEOPARDY_PATTERNS for match in pattern.finditer(text)]
    tokens = token_spans(text)
    kinds = [_clue_word(text[s:e]) for s, e in tokens]
    for i, kind in enumerate(kinds):
        if kind != "pointer":
            continue
        end = i + 1
        while end < len(kinds) and kinds[end] == "adjective":
            end += 1
        nouns = end
        while nouns < len(kinds) and kinds[nouns] == "noun":
            nouns += 1
        if nouns > end:  # at least one noun
            spans.append((tokens[i][0], tokens[nouns - 1][1]))
    return spans


def _clue_word(token: str) -> str | None:
    """What a token can be in a clue: "pointer", "adjective", "noun", or None."""
    if not token.isalpha():
        return None
    pos = parse(token).tag.POS
    if lemma(token) in _POINTING or (token.isupper() and pos != "PREP"):
        return "pointer"
    return {"ADJF": "adjective", "ADJS": "adjective", "NOUN": "noun"}.get(pos)


# --- Winograd and RWSD ------------------------------------------------------------------------


class Referents(Constraint):
    """Winograd: the anaphor (``reference``), every candidate antecedent (``options``) and the verbs
    they depend on. RWSD: its two spans (``target``), whose word indices are recomputed."""

    name = "referents"

    def check(self, example: Example) -> Problem | None:
        fields = example.fields
        if "target" in fields:  # RWSD
            if not isinstance(fields["target"], Mapping):
                return "target", "expected an object with span1_text, span1_index, span2_text, span2_index"
            for key in ("span1_index", "span2_index"):
                if not _is_int(fields["target"].get(key, 0)):
                    return f"target.{key}", f"expected a word index, got {fields['target'][key]!r:.60}"
            return None
        options = fields.get("options")
        if not isinstance(options, list) or not all(isinstance(option, str) for option in options):
            return "options", f"expected a list of strings (the candidate antecedents), got {options!r:.60}"
        if not isinstance(fields.get("reference"), str):
            return "reference", f"expected a string (the anaphor), got {fields.get('reference')!r:.60}"
        return None

    def prepare(self, examples: Sequence[Example], fields: Sequence[str]) -> None:
        dependency_parse.prepare([e.fields["text"] for e in examples])

    def protect(self, example: Example, fields: Sequence[str]) -> Protected:
        text = example.fields["text"]
        if "target" in example.fields:
            anchors = [span for span in _rwsd_spans(example).values() if span]
        else:
            anchors = _winograd_anchors(text, example.fields.get("options") or [], example.fields.get("reference"))
        return {"text": anchors + _governing_verbs(text, anchors)}

    def repair(self, example: Example, perturbed: dict[str, Any], moved: Moved) -> None:
        if "target" not in example.fields:
            return
        target = dict(example.fields["target"])
        for key, span in _rwsd_spans(example).items():
            if span and span in moved.get("text", {}):
                start = moved["text"][span][0]
                target[f"{key}_index"] = len(perturbed["text"][:start].split())
        perturbed["target"] = target


def _winograd_anchors(text: str, options: Sequence[str], reference: str | None) -> list[Span]:
    """Each option where the text has it verbatim, else the words sharing a lemma with it (an option
    given in another case, "старый сарай" for "в старом сарае"); every word of the anaphor's lemma."""
    text_words = [(span, lemma(text[span[0] : span[1]])) for span in token_spans(text) if is_word(text, span)]

    def same_lemma(phrase: str) -> list[Span]:
        wanted = {lemma(word) for word in words(phrase)}
        return [span for span, word_lemma in text_words if word_lemma in wanted]

    anchors: list[Span] = []
    for option in options:
        found = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(option)}(?!\w)", text, re.IGNORECASE)]
        anchors += found or same_lemma(option)
    if reference:
        anchors += same_lemma(reference)
    return anchors


def _governing_verbs(text: str, anchors: Sequence[Span]) -> list[Span]:
    """The verbs heading the anchors in natasha's dependency parse."""
    words = dependency_parse(text)
    by_id = {word.id: word for word in words}
    verbs = []
    for word in words:
        if any(word.start < end and start < word.stop for start, end in anchors):
            head = by_id.get(word.head)
            if head is not None and head.pos in ("VERB", "AUX"):
                verbs.append((head.start, head.stop))
    return verbs


def _rwsd_spans(example: Example) -> dict[str, Span | None]:
    """RWSD's span1/span2 located by their word index (words split on whitespace)."""
    text, target = example.fields["text"], example.fields["target"]
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    spans: dict[str, Span | None] = {}
    for key in ("span1", "span2"):
        needle, index = target.get(f"{key}_text"), target.get(f"{key}_index")
        if not isinstance(needle, str) or not needle:
            spans[key] = None
            continue
        at = starts[index] if isinstance(index, int) and 0 <= index < len(starts) else -1
        start = at if at >= 0 and text.startswith(needle, at) else text.find(needle)
        spans[key] = (start, start + len(needle)) if start >= 0 else None
    return spans


# --- MultiQ, RUSSE, RuCoS -----------------------------------------------------------------------

_MULTIHOP_ANSWERS = (("bridge_answers", "support_text"), ("main_answers", "main_text"))


class Multihop(Constraint):
    """MultiQ: every mention of the bridge and main answers, in all fields; the answers' offsets
    are recomputed so they still point at their segments in the perturbed texts."""

    name = "multihop"

    def check(self, example: Example) -> Problem | None:
        for answers, _ in _MULTIHOP_ANSWERS:
            value = example.fields.get(answers) or []
            if not isinstance(value, list):
                return answers, f"expected a list of answers, got {type(value).__name__}"
            for i, answer in enumerate(value):
                where = f"{answers}[{i}]"
                if not isinstance(answer, Mapping):
                    return where, f"expected an object with segment and offset, got {answer!r:.60}"
                if not isinstance(answer.get("segment"), str) or not answer["segment"]:
                    return f"{where}.segment", f"expected the answer's text, got {answer.get('segment')!r:.60}"
                if "offset" in answer and not _is_int(answer["offset"]):
                    return f"{where}.offset", f"expected a character offset, got {answer['offset']!r:.60}"
        return None

    def protect(self, example: Example, fields: Sequence[str]) -> Protected:
        protected: Protected = {f: [] for f in fields}
        segments = set()
        for answers, text_field in _MULTIHOP_ANSWERS:
            for answer in example.fields.get(answers) or []:
                segments.add(answer["segment"])
                span = _answer_span(example.fields[text_field], answer)
                if span and text_field in protected:
                    protected[text_field].append(span)
        for f in fields:
            protected[f] += [span for segment in segments for span in find_all(example.fields[f], segment)]
        return protected

    def repair(self, example: Example, perturbed: dict[str, Any], moved: Moved) -> None:
        for answers, text_field in _MULTIHOP_ANSWERS:
            if not example.fields.get(answers):
                continue
            if text_field not in moved:  # the text did not change, nor did the offsets
                continue
            updated = []
            for answer in example.fields[answers]:
                span = _answer_span(example.fields[text_field], answer)
                # an answer whose span was not followed (spaces around its segment): its first mention now
                first_mention = {**answer, "offset": None}
                followed = moved[text_field].get(span) if span is not None else None
                new_span = followed or _answer_span(perturbed[text_field], first_mention)
                updated.append({**answer, "offset": new_span[0]} if new_span else dict(answer))
            perturbed[answers] = updated


def _answer_span(text: str, answer: Mapping[str, Any]) -> Span | None:
    """Where an answer is: its offset when the segment is there, else the segment's first mention."""
    segment, offset = answer["segment"], answer.get("offset")
    if isinstance(offset, int) and text.startswith(segment, offset):
        return offset, offset + len(segment)
    start = text.find(segment)
    return (start, start + len(segment)) if start >= 0 else None


class TargetWord(Constraint):
    """RUSSE: the target word in each sentence (start1/end1, start2/end2), offsets recomputed. The
    offsets may end at the word or one past it (tasks.offsets); the perturbed ones keep the record's
    convention."""

    name = "target_word"
    anchors = (("sentence1", "start1", "end1"), ("sentence2", "start2", "end2"))

    def check(self, example: Example) -> Problem | None:
        for text_field, start_key, end_key in self.anchors:
            if start_key not in example.fields and end_key not in example.fields:
                continue  # no offsets to keep right
            start, end = example.fields.get(start_key), example.fields.get(end_key)
            text = example.fields[text_field]
            if word_span(text, start, end) is None:
                problem = f"{start_key}/{end_key} {start!r:.20}/{end!r:.20} are not a word's offsets in {text_field}"
                return start_key, f"{problem} ({len(text)} characters)"
        return None

    def protect(self, example: Example, fields: Sequence[str]) -> Protected:
        protected: Protected = {}
        for (text_field, _, _), span in self._spans(example):
            if text_field in fields:
                protected.setdefault(text_field, []).append(span)
        return protected

    def repair(self, example: Example, perturbed: dict[str, Any], moved: Moved) -> None:
        for (text_field, start_key, end_key), span in self._spans(example):
            if span in moved.get(text_field, {}):
                new_start, new_end = moved[text_field][span]
                # the record's convention: where its offsets lay relative to the span kept
                perturbed[start_key] = new_start + example.fields[start_key] - span[0]
                perturbed[end_key] = new_end + example.fields[end_key] - span[1]

    def _spans(self, example: Example) -> list[tuple[tuple[str, str, str], Span]]:
        """Each anchor's word with what its offsets take in around it (the space or punctuation after
        it, kept so that the word stays a word); check() made sure that offsets, where present, point
        at a word."""
        fields, spans = example.fields, []
        for anchor in self.anchors:
            text, start, end = fields[anchor[0]], fields.get(anchor[1]), fields.get(anchor[2])
            word = word_span(text, start, end)
            if word is not None:  # protected spans are tightened (rueval.robustness.targets): so is this one
                start, end = cast(int, start), cast(int, end)  # a word's offsets: whole numbers (word_span)
                (kept,) = tighten(text, [(min(start, word[0]), max(min(end, len(text)), word[1]))])
                spans.append((anchor, kept))
        return spans


class Mentions(Constraint):
    """RuCoS: every mention of a candidate entity in the passage (the answer is one of them)."""

    name = "mentions"

    def protect(self, example: Example, fields: Sequence[str]) -> Protected:
        candidates = set(example.candidates)
        return {f: [span for c in candidates for span in find_all(example.fields[f], c)] for f in fields}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
