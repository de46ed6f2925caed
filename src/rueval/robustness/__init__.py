"""Robustness after TAPE (Taktasheva et al., 2022, Section 4.2): perturbations and attacks on
Russian text, constraints that keep the gold answer valid, semantic filtering, attack success rate.

    targets.py         from each task's shape: the fields perturbations change, constraints, AddSent's field
    perturbations.py   ButterFingers, Emojify, EDA delete/swap, ChangeCharCase, BackTranslation, AddSent
    constraints.py     Jeopardy, NamedEntities, Referents, Multihop (+ RSG: TargetWord, Mentions)
    semantic_filter.py BERTScore (bert-score) or character n-gram similarity; the rate halved, originals kept
    emoji_dictionary.py Emojify's dictionary, generated from the CLDR Russian emoji names
    attack.py          scores on perturbed examples and the attack success rate

A run uses them through rueval.run.robustness (`rueval run --perturb`, `rueval perturb`).
"""

from rueval.robustness.perturbations import PERTURBATIONS, Perturbation

__all__ = ["PERTURBATIONS", "Perturbation"]
