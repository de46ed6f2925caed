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

from rueval.core.errors import RuevalError
from rueval.data.mera_tasks import MERA
from rueval.tasks import Example


def demonstrations(
    train: Sequence[Example],
    k: int,
    episode: int,
    per_item_seed: int | None,
    items: int,
    seed: int,
    task_name: str,
    examples: Sequence[Example] = (),
) -> list[list[Example]]:
    """The demonstrations before each of ``items`` test items: episode ``episode``'s set before every
    item (TAPE's), or with ``per_item_seed`` each item's drawn in turn (MERA's; given the items as
    ``examples``, as MERA's sampler draws them for the task: item_demos)."""
    if per_item_seed is not None:
        within = MERA[task_name].demos_within if task_name in MERA else ""
        return item_demos(train, k, items, per_item_seed, task_name, examples, within)
    return [episode_demos(train, k, episode, seed, task_name)] * items  # one list: its questions are built once


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


def item_demos(
    train: Sequence[Example],
    k: int,
    items: int,
    seed: int,
    task_name: str,
    examples: Sequence[Example] = (),
    within: str = "",
) -> list[list[Example]]:
    """The demonstrations of each of ``items`` test items, drawn in turn as lm-eval's sampler draws
    them: ``random.Random(seed).sample(train, k)`` for one item after another, from every train record.
    Given the items (``examples``), as MERA's sampler (benchmark_tasks/custom_samplers.py): from the
    train records whose ``within`` field is the item's (ruMMLU's domain), and without the item's own
    record where train holds it (a task whose demonstrations come from its test split), one fewer then."""
    if k == 0:
        return [[] for _ in range(items)]
    if len(train) < k:
        raise RuevalError(f"{task_name}: {k}-shot needs {k} train examples, the data has {len(train)}")
    draw, pool = random.Random(seed), list(train)
    if not examples:
        return [draw.sample(pool, k) for _ in range(items)]
    pools: dict[object, list[Example]] = defaultdict(list)
    for example in pool:
        pools[example.fields.get(within) if within else None].append(example)
    drawn = []
    for item in examples:
        own = pools[item.fields.get(within) if within else None]
        if len(own) < k:
            where = f" with {within} {item.fields.get(within)!r}" if within else ""
            raise RuevalError(f"{task_name}: {k}-shot needs {k} train examples{where}, the data has {len(own)}")
        same = (item.idx, item.fields)
        drawn.append([demo for demo in draw.sample(own, k) if (demo.idx, demo.fields) != same])
    return drawn
