"""Few-shot episodes (TAPE, Taktasheva et al., 2022, Section 4.1): for each k, several sets of
k demonstrations drawn from train, the same set before every test item of an episode."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence

from rueval.errors import RuevalError
from rueval.tasks import Example


def episode_demos(train: Sequence[Example], k: int, episode: int, seed: int, task_name: str) -> list[Example]:
    """The demonstrations of episode ``episode`` of the k-shot setting.

    When the train records carry TAPE's ``episode`` lists, the episodes are read from them: the
    episode ids with exactly k members are the k-shot episodes, taken in id order. Otherwise k
    labelled examples are drawn with a seed; episodes are drawn independently of each other."""
    if k == 0:
        return []
    labelled = [e for e in train if e.label is not None]
    members: dict[int, list[Example]] = defaultdict(list)
    for example in labelled:
        for episode_id in example.fields.get("episode") or ():
            members[episode_id].append(example)
    k_shot = sorted(episode_id for episode_id, group in members.items() if len(group) == k)
    if k_shot:
        return members[k_shot[episode % len(k_shot)]]
    if len(labelled) < k:
        raise RuevalError(f"{task_name}: {k}-shot needs {k} labelled train examples, the data has {len(labelled)}")
    return random.Random(f"{seed}/{task_name}/{k}/{episode}").sample(labelled, k)
