"""Few-shot demonstrations drawn from train.

TAPE's episodes (Taktasheva et al., 2022, Section 4.1): for each k, several sets of k
demonstrations, the same set before every test item of an episode. TAPE draws each episode's
demonstrations "from D_train with replacement"; rueval reads that as independent episodes (a record
may appear in several) of distinct demonstrations (none twice in one).

MERA's (lm-eval's few-shot sampler, MERA-Evaluation/MERA benchmark_tasks/custom_samplers.py): each
test item's k demonstrations drawn in turn, in the items' order, by one generator of a fixed seed.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rueval.core.errors import RuevalError
from rueval.tasks import Example


def demonstrations(
    train: Sequence[Example],
    k: int,
    episode: int,
    per_item_seed: int | None,
    items: Sequence[Example] | int,
    seed: int,
    task_name: str,
    same: str | None = None,
) -> list[list[Example]]:
    """The demonstrations before each test item (``items``, or their number): episode ``episode``'s set
    before every item (TAPE's), or with ``per_item_seed`` each item's drawn in turn (MERA's; with
    ``same``, a field, from the train records whose field is the item's: MERA's USE)."""
    count = items if isinstance(items, int) else len(items)
    if per_item_seed is not None and same is not None and not isinstance(items, int):
        return same_field_demos(train, k, per_item_seed, task_name, same, items)
    if per_item_seed is not None:
        return item_demos(train, k, count, per_item_seed, task_name)
    return [episode_demos(train, k, episode, seed, task_name)] * count  # one list: its questions are built once


def episode_demos(train: Sequence[Example], k: int, episode: int, seed: int, task_name: str) -> list[Example]:
    """The demonstrations of episode ``episode`` (0-based) of the k-shot setting.

    When the train records carry TAPE's ``episode`` lists, the episodes are read from them: the
    episode ids with exactly k members are the k-shot episodes, taken in id order. Asking for more
    episodes than the lists hold is an error (never a repeat of an earlier episode), and so is an
    episode that lists a record twice. Otherwise k distinct labelled examples are drawn with a seed;
    episodes are drawn independently of each other."""
    if k == 0:
        return []
    labelled = [e for e in train if e.label is not None]
    members = episode_lists(labelled, task_name)
    k_shot = sorted(episode_id for episode_id, group in members.items() if len(group) == k)
    if k_shot:
        if episode >= len(k_shot):
            raise RuevalError(
                f"{task_name}: {episode + 1} {k}-shot episodes asked for, but the data's episode lists hold "
                f"{len(k_shot)} (episode ids {', '.join(map(str, k_shot))}); ask for --episodes {len(k_shot)} or fewer"
            )
        return members[k_shot[episode]]
    if len(labelled) < k:
        raise RuevalError(f"{task_name}: {k}-shot needs {k} labelled train examples, the data has {len(labelled)}")
    return random.Random(f"{seed}/{task_name}/{k}/{episode}").sample(labelled, k)


def episode_lists(train: Sequence[Example], task_name: str) -> dict[int, list[Example]]:
    """Each episode id of the train records' ``episode`` lists -> its records, in train order; a
    record listed twice in one episode (an id repeated in its list, or the same record, idx and all,
    on two lines) is an error naming the episode."""
    members: dict[int, list[Example]] = defaultdict(list)
    seen: dict[int, set[str]] = defaultdict(set)
    for example in train:
        record = json.dumps([example.key, example.fields], sort_keys=True, ensure_ascii=False, default=str)
        for episode_id in example.fields.get("episode") or ():
            if record in seen[episode_id]:
                raise RuevalError(
                    f"{task_name}: train episode {episode_id} lists the record with idx {example.key} twice; "
                    "an episode's demonstrations are distinct records"
                )
            seen[episode_id].add(record)
            members[episode_id].append(example)
    return members


def item_demos(train: Sequence[Example], k: int, items: int, seed: int, task_name: str) -> list[list[Example]]:
    """The demonstrations of each of ``items`` test items, drawn in turn as lm-eval's sampler draws
    them: ``random.Random(seed).sample(train, k)`` for one item after another, from every train record."""
    if k == 0:
        return [[] for _ in range(items)]
    if len(train) < k:
        raise RuevalError(f"{task_name}: {k}-shot needs {k} train examples, the data has {len(train)}")
    draw, pool = random.Random(seed), list(train)
    return [draw.sample(pool, k) for _ in range(items)]


def same_field_demos(
    train: Sequence[Example], k: int, seed: int, task_name: str, field: str, items: Sequence[Example]
) -> list[list[Example]]:
    """Each item's demonstrations drawn in turn as MERA's sampler draws them for USE: ``random.Random(seed)
    .sample(pool, k)`` where the pool is the train records whose ``field`` is the item's."""
    if k == 0:
        return [[] for _ in items]
    pools: dict[Any, list[Example]] = defaultdict(list)
    for example in train:
        pools[example.fields.get(field)].append(example)
    draw, drawn = random.Random(seed), []
    for item in items:
        pool = pools[item.fields.get(field)]
        if len(pool) < k:
            raise RuevalError(
                f"{task_name}: {k}-shot draws from the train examples of the same {field} as the item; "
                f"{field} {item.fields.get(field)!r} (example {item.key}) has {len(pool)}"
            )
        drawn.append(draw.sample(pool, k))
    return drawn
