"""Robustness after TAPE (Taktasheva et al., 2022, Section 4.2): perturbations and attacks on
Russian text, constraints that keep the gold answer valid, semantic filtering, attack success rate.

    targets.py         from each task's shape: the fields perturbations change, its constraints, AddSent's field
    base.py            Perturbation: a rate, a seed, the pieces it rewrites and how their edits are applied
    perturbations.py   ButterFingers, Emojify, EDA delete/swap, ChangeCharCase (and the registry of all)
    model_based.py     BackTranslation, AddSent (backends.py: their models)
    constraints.py     Jeopardy, NamedEntities, Referents, Multihop (+ RSG: TargetWord, Mentions)
    semantic_filter.py BERTScore (bert-score) or character n-gram similarity; 3 candidates, the rate
                       halved, originals kept
    emoji_dictionary.py Emojify's dictionary, generated from CLDR's Russian emoji names and keywords
    attack.py          scores on perturbed examples and the attack success rate

A run uses them through rueval.run.robustness (`rueval run --perturb`, `rueval perturb`).
"""

from rueval.robustness.perturbations import PERTURBATIONS, Perturbation

__all__ = ["PERTURBATIONS", "Perturbation"]
