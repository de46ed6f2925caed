"""TAPE Winograd: does the reference (a relative pronoun) point to the candidate answer?

The first template of Taktasheva et al. (2022), Appendix C, Table 2, with "yes"/"no" answers;
the paper's capital "Слово" after the quoted sentence is kept.
"""

from __future__ import annotations

from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATE = 'В предложении "{text}" Слово "{reference}" относится к слову "{answer}"?'
OPTIONS = {YES: 1, NO: 0}

PROMPT = ChoicePrompt(TEMPLATE, OPTIONS)
