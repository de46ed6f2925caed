"""13-gram overlap between a task's items and a training corpus, as lm-evaluation-harness's decontamination
computes it (lm-eval 0.4.13: ``Janitor`` and ``word_ngrams`` in lm_eval/decontamination/janitor.py, the rule
in ``get_train_overlap``, lm_eval/decontamination/decontaminate.py):

- normalisation (``Janitor.normalize_string``): ASCII capitals lowered and every ASCII punctuation mark
  (``string.punctuation``) deleted, nothing else changed: Cyrillic keeps its case and « » — … stay, as
  lm-eval's translation table holds only ASCII;
- n-grams (``word_ngrams``): the normalised text split on whitespace (``str.split``), every run of 13
  consecutive words; a text of fewer than 13 words has none;
- the rule: an item is flagged when any of its 13-grams is a 13-gram of a corpus document (lm-eval makes
  the training set's 13-grams document by document, so none spans two documents).

Beside the flag, each item's share of its distinct 13-grams found in the corpus.

The task's 13-grams stay in memory and the corpus streams past them (rueval.audit.corpus_files), so memory
is bounded by the task, not the corpus. For speed the normalisation runs on UTF-8 bytes (it changes only
ASCII bytes, which never occur inside a multi-byte character, so it equals lm-eval's on the text); words are
numbered by the task's vocabulary (a word no item has ends every 13-gram through it); each window of 13
known words is hashed in numpy (a random linear hash mod 2**64) and looked up among the task's sorted
hashes; a hash found is then compared word by word, so a collision never counts.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from rueval.audit.corpus_files import corpus_files, pieces
from rueval.core.errors import RuevalError
from rueval.core.progress import counting

NGRAM = 13  # lm-eval's Janitor(ngram_n=13) and the 13-grams its decontamination reads
# str.split's whitespace beyond ASCII's, as UTF-8: U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029,
# U+202F, U+205F and U+3000 (its U+001C..U+001F are ASCII bytes, made spaces by _TABLE)
UNICODE_SPACES = tuple(ch.encode() for ch in "\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") + tuple(
    chr(code).encode() for code in range(0x2000, 0x200B)
)
_LEADS = np.zeros(256, bool)
_LEADS[[space[0] for space in UNICODE_SPACES]] = True
_SPACE_PAIRS = np.array([int.from_bytes(s) for s in UNICODE_SPACES if len(s) == 2], np.uint32)
_SPACE_TRIPLES = np.array([int.from_bytes(s) for s in UNICODE_SPACES if len(s) == 3], np.uint32)
_TABLE = bytes.maketrans(
    string.ascii_uppercase.encode() + b"\x1c\x1d\x1e\x1f", string.ascii_lowercase.encode() + b" " * 4
)
_DELETE = string.punctuation.encode()
_NO_IDS = np.empty(0, np.int64)


def words(text: bytes) -> list[bytes]:
    """lm-eval's words of a UTF-8 text: Janitor.normalize_string, then str.split, in bytes."""
    return _ascii_spaces(text.translate(_TABLE, _DELETE)).split()


def _ascii_spaces(text: bytes) -> bytes:
    """The text with each of UNICODE_SPACES' byte sequences made ASCII spaces, found in numpy (bytes.replace
    searches Cyrillic UTF-8, where every other byte is a continuation byte, ten times slower)."""
    codes = np.frombuffer(text + b"\0\0", np.uint8)
    leads = np.flatnonzero(_LEADS[codes[:-2]])
    if not len(leads):
        return text
    pairs = codes[leads].astype(np.uint32) << 8 | codes[leads + 1]
    is_pair = np.isin(pairs, _SPACE_PAIRS)
    is_triple = np.isin(pairs << 8 | codes[leads + 2], _SPACE_TRIPLES)
    if not (is_pair.any() or is_triple.any()):
        return text
    spaced = codes[:-2].copy()
    for width, found in ((2, leads[is_pair]), (3, leads[is_triple])):
        for offset in range(width):
            spaced[found + offset] = ord(" ")
    return spaced.tobytes()


@dataclass(frozen=True)
class ItemOverlap:
    """One item against the corpus: its distinct 13-grams, and how many of them the corpus has."""

    ngrams: int
    found: int

    @property
    def flagged(self) -> bool:
        """lm-eval's rule: any of the item's 13-grams in the corpus."""
        return self.found > 0

    @property
    def share(self) -> float | None:
        """The share of the item's distinct 13-grams found; None for an item of fewer than 13 words."""
        return self.found / self.ngrams if self.ngrams else None

    def to_json(self) -> dict[str, Any]:
        return {"flagged": self.flagged, "share": self.share, "ngrams": self.ngrams, "found": self.found}


@dataclass(frozen=True)
class CorpusOverlap:
    """Every item's overlap with the corpus (in the items' order), and what of the corpus was read."""

    items: tuple[ItemOverlap, ...]
    files: tuple[str, ...]
    documents: int
    fields: tuple[str, ...]
    n: int = NGRAM

    @property
    def flagged(self) -> int:
        return sum(item.flagged for item in self.items)

    def summary(self) -> dict[str, Any]:
        """The task's figures: items flagged (and their share), items too short for any 13-gram, the corpus read."""
        measured = [item for item in self.items if item.ngrams]
        return {
            "n": self.n,
            "items": len(self.items),
            "flagged": self.flagged,
            "flagged_share": self.flagged / len(self.items) if self.items else None,
            "without_ngrams": len(self.items) - len(measured),
            "corpus_files": list(self.files),
            "corpus_documents": self.documents,
            "corpus_fields": list(self.fields),
        }


class TaskNgrams:
    """A task's n-grams held for the search: the items' words numbered by the task's vocabulary, each
    window of n words (item, start) with its hash, sorted by hash, and which windows the corpus has."""

    def __init__(self, texts: Sequence[str], n: int = NGRAM, seed: int = 0):
        if n < 1:
            raise RuevalError(f"n-grams of {n} words: expected 1 or more")
        self.n, self.items = n, len(texts)
        self.vocabulary: dict[bytes, int] = {}
        number = self.vocabulary.setdefault
        item_ids = [np.array([number(w, len(self.vocabulary)) for w in words(t.encode())], np.int64) for t in texts]
        self.tokens = np.concatenate([_NO_IDS, *item_ids])
        offsets = np.cumsum([0, *map(len, item_ids)])
        spans = [(i, offsets[i], len(ids) - n + 1) for i, ids in enumerate(item_ids) if len(ids) >= n]
        self.starts = np.concatenate([_NO_IDS, *(np.arange(start, start + count) for _, start, count in spans)])
        self.item_of = np.concatenate([_NO_IDS, *(np.full(count, i) for i, _, count in spans)])
        self.first = self._first_in_item()
        self.weights = np.random.default_rng(seed).integers(1, 2**63, n, dtype=np.uint64) | np.uint64(1)
        hashes = self.hashes(self.tokens)[self.starts] if len(self.starts) else np.empty(0, np.uint64)
        self.order = np.argsort(hashes, kind="stable")
        self.sorted = hashes[self.order]
        self.found = np.zeros(len(self.starts), bool)
        self._complete: set[int] = set()  # hashes whose every window is found: not compared again
        self._carry = _NO_IDS

    def _first_in_item(self) -> np.ndarray:
        """Each window that is its item's first of its words (an item's distinct n-grams)."""
        first = np.zeros(len(self.starts), bool)
        seen: set[tuple[int, bytes]] = set()
        for w, (item, start) in enumerate(zip(self.item_of.tolist(), self.starts.tolist(), strict=True)):
            key = (item, self.tokens[start : start + self.n].tobytes())
            if key not in seen:
                seen.add(key)
                first[w] = True
        return first

    def hashes(self, ids: np.ndarray) -> np.ndarray:
        """The hash of every window of n ids (len(ids) - n + 1 of them)."""
        count = len(ids) - self.n + 1
        values = ids.astype(np.uint64)
        hashes = np.zeros(max(count, 0), np.uint64)
        for j, weight in enumerate(self.weights):
            hashes += values[j : j + count] * weight
        return hashes

    def scan(self, text: bytes, goes_on: bool) -> None:
        """Marks the task's windows found in ``text`` (documents ended by a word no item has); ``goes_on``:
        its last document continues in the next text, so its last n - 1 words start the next scan."""
        found = words(text)
        ids = np.fromiter(map(self.vocabulary.get, found, repeat(-1)), np.int64, len(found))
        if len(self._carry):
            ids = np.concatenate([self._carry, ids])
        self._match(ids)
        self._carry = ids[max(0, len(ids) - self.n + 1) :] if goes_on else _NO_IDS

    def _match(self, ids: np.ndarray) -> None:
        n = self.n
        if len(ids) < n or not len(self.sorted):
            return
        unknown_before = np.concatenate(([0], np.cumsum(ids < 0)))
        starts = np.flatnonzero(unknown_before[n:] == unknown_before[:-n])  # windows of known words only
        if not len(starts):
            return
        hashes = self.hashes(ids)[starts]
        positions = np.searchsorted(self.sorted, hashes)
        hit = self.sorted[np.minimum(positions, len(self.sorted) - 1)] == hashes
        for start, position, value in zip(starts[hit].tolist(), positions[hit].tolist(), hashes[hit].tolist()):
            if value not in self._complete:
                self._confirm(ids[start : start + n], position, value)

    def _confirm(self, window: np.ndarray, position: int, value: int) -> None:
        """Marks the task's windows of this hash that hold the window's very words."""
        complete = True
        while position < len(self.sorted) and self.sorted[position] == value:
            w = self.order[position]
            if not self.found[w]:
                start = self.starts[w]
                self.found[w] = np.array_equal(self.tokens[start : start + self.n], window)
                complete = complete and bool(self.found[w])
            position += 1
        if complete:
            self._complete.add(value)

    def overlaps(self) -> tuple[ItemOverlap, ...]:
        counted = np.bincount(self.item_of[self.first], minlength=self.items)
        found = np.bincount(self.item_of[self.first & self.found], minlength=self.items)
        return tuple(ItemOverlap(int(c), int(f)) for c, f in zip(counted, found, strict=True))


def corpus_overlap(
    texts: Sequence[str], corpus: str | Path, fields: Sequence[str] = ("text",), n: int = NGRAM
) -> CorpusOverlap:
    """Each text's n-gram overlap with the corpus (a file or folder of text, JSON Lines or Parquet files,
    their ``fields`` read from JSON Lines and Parquet), computed as lm-eval's decontamination computes it."""
    if not fields:
        raise RuevalError("the corpus's text fields: give at least one")
    files = corpus_files(corpus)
    ngrams = TaskNgrams(texts, n)
    documents = 0
    total = sum(file.stat().st_size for file in files)
    with counting(f"{n}-grams in {corpus}", total // 2**20 or 1, "MB") as counter:
        read = 0
        for file in files:
            for piece in pieces(file, fields):
                ngrams.scan(piece.text, piece.goes_on)
                documents += piece.documents
                read += piece.read
                counter.advance(read // 2**20 - counter.done)
    return CorpusOverlap(ngrams.overlaps(), tuple(map(str, files)), documents, tuple(fields), n)
