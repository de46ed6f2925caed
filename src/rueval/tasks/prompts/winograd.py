"""TAPE Winograd: does the reference (a relative pronoun) point to the candidate answer?

The templates of Taktasheva et al. (2022), Appendix C, Table 2, with "yes"/"no" answers; the
first is the default, the paper's capital "Слово" after the quoted sentence kept. The table prints
five rows, its first two identical in the transliteration: the four distinct ones are the variants.
"""

from __future__ import annotations

from rueval.tasks.prompts.common import NO, YES, ChoicePrompt

TEMPLATES = (
    'В предложении "{text}" Слово "{reference}" относится к слову "{answer}"?',
    'В предложении "{text}" Слово "{reference}" относится к слову "{answer}" или нет?',
    '"{text}" Слово "{reference}" относится к слову "{answer}" или нет?',
    '"{text}" Слово "{reference}" относится к слову "{answer}"?',
)
TEMPLATE = TEMPLATES[0]
OPTIONS = {YES: 1, NO: 0}

PROMPT_VARIANTS = tuple(ChoicePrompt(template, OPTIONS) for template in TEMPLATES)
PROMPT = PROMPT_VARIANTS[0]
