"""The command line's options: their types, choices (taken from the modules that own them) and parsing."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import typer
from rich.console import Console
from rich.text import Text

from rueval.cli.groups import GroupValues, OptionGroup
from rueval.core.errors import RuevalError
from rueval.data import TAPE_SETS
from rueval.models.factory import BACKENDS, BOS_POLICIES, CACHE_MODES, CHAT_SCORINGS, DEVICE_MAPS, DTYPES, LOAD_IN
from rueval.solvers import NAMED
from rueval.solvers.lm import SCORINGS
from rueval.solvers.options import RULE_CHOICES
from rueval.solvers.trivial import STRATEGIES
from rueval.tasks.prompts import PROMPT_CHOICES

console = Console()
errors = Console(stderr=True)


def _choices(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A str Enum of ``values`` for typer, named as the values are written."""
    members = {value.replace("-", "_"): value for value in values}
    return Enum(name, members, type=str)  # type: ignore[return-value]  # Enum's functional API makes a class


if TYPE_CHECKING:  # Enums made at run time from their modules' values, whose members a type checker cannot list
    SplitName = Any
    FallbackName = Any
    RuleChoice = Any
    ScoringName = Any
    DtypeName = Any
    BosName = Any
    TapeSetName = Any
    CacheMode = Any
    DeviceMapName = Any
    LoadInName = Any
    ChatScoringName = Any
    PromptsName = Any
else:
    SplitName = _choices("SplitName", ("val", "test"))
    FallbackName = _choices("FallbackName", STRATEGIES)
    RuleChoice = _choices("RuleChoice", RULE_CHOICES)
    ScoringName = _choices("ScoringName", SCORINGS)
    DtypeName = _choices("DtypeName", DTYPES)
    BosName = _choices("BosName", BOS_POLICIES)
    TapeSetName = _choices("TapeSetName", TAPE_SETS)
    CacheMode = _choices("CacheMode", CACHE_MODES)
    DeviceMapName = _choices("DeviceMapName", DEVICE_MAPS)
    LoadInName = _choices("LoadInName", LOAD_IN)
    ChatScoringName = _choices("ChatScoringName", CHAT_SCORINGS)
    PromptsName = _choices("PromptsName", PROMPT_CHOICES)


def user_errors(command: Callable) -> Callable:
    """Bad input ends in one line on stderr and exit code 2, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except RuevalError as e:
            errors.print(Text.assemble(("error:", "bold red"), f" {e}"), highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


TasksOption = Annotated[str, typer.Option("--tasks", "-t", help="Comma-separated task names, or rsg, tape, all.")]
ModelOption = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help=", ".join(NAMED)
        + ", "
        + ", ".join(f"{name}:{backend.target}" for name, backend in BACKENDS.items())
        + ".",
    ),
]
DataOption = Annotated[
    str | None,
    typer.Option("--data", help="A directory or zip in the official layout, or 'hf'. Default: the bundled samples."),
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed for every random choice.")]
SplitOption = Annotated[
    SplitName | None, typer.Option(help="Split to score. Default: test when it is labelled, else val.")
]
LimitOption = Annotated[
    int | None, typer.Option(min=1, help="Only the first N records of each task (not the benchmark's scores).")
]
RunLimitOption = Annotated[
    float | None,
    typer.Option(
        help="Score only the first N records of each task, or below 1 that share of them, rounded up (lm-eval's "
        "--limit); limited scores are not the benchmark's."
    ),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Show no progress or information, only the results.")]
VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Also show each step's detail: sizes, request counts, timings.")
]
GenKwargsOption = Annotated[
    str | None,
    typer.Option(
        "--gen_kwargs",
        "--gen-kwargs",
        help="LMs, generation tasks (lm-eval's form): temperature=0,top_p=...,max_gen_toks=N,until=TEXT,"
        "do_sample=false. Default: TAPE's sampling, top_p 0.8 at temperature 1.",
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        help="openai: models (-m, --addsent-model): the server, e.g. http://localhost:8000/v1; "
        "several comma-separated, or @FILE with one URL a line."
    ),
]
FallbackOption = Annotated[
    FallbackName, typer.Option("--fallback", help="-m heuristic: the baseline for examples no rule covers.")
]
RulesOption = Annotated[
    RuleChoice,
    typer.Option(
        "--rules",
        help="-m heuristic: fitted (the rules that beat the fallback on train) or all (every rule of the paper).",
    ),
]
ShotsOption = Annotated[
    str | None,
    typer.Option(help="LMs: numbers of few-shot demonstrations, e.g. 0,1,4,8. Default: 0; on MERA's files MERA's."),
]
EpisodesOption = Annotated[int, typer.Option(min=1, help="LMs: demonstration sets per k > 0 (TAPE uses 5).")]
PromptsOption = Annotated[
    PromptsName,
    typer.Option(
        help="LMs: ask each task with its default prompt, or with all the prompts its paper ran (TAPE: Winograd, "
        "Ethics), reporting each prompt's score and their mean ± std; the headline stays the default prompt's."
    ),
]
ScoringOption = Annotated[
    ScoringName, typer.Option(help="LMs: loglik (continuation log-likelihood) or ppl (TAPE's perplexity).")
]
DeviceOption = Annotated[
    str | None, typer.Option(help="hf: torch device, e.g. cpu, cuda, cuda:1. Default: cuda when there is a GPU.")
]
DtypeOption = Annotated[DtypeName, typer.Option(help="hf: weights dtype.")]
BatchSizeOption = Annotated[
    str, typer.Option("--batch-size", "--batch_size", help="hf: rows per forward pass, or auto.")
]
ModelArgsOption = Annotated[
    str | None,
    typer.Option(
        "--model_args",
        "--model-args",
        help="lm-eval's form, with --model hf, vllm or local-completions: pretrained=PATH_OR_HUB_ID[,dtype=...] "
        "(hf, vllm; vllm also tensor_parallel_size=N,...), model=NAME,base_url=URL[,tokenizer=...,num_concurrent=N] "
        "(local-completions).",
    ),
]
NumFewshotOption = Annotated[
    int | None, typer.Option("--num_fewshot", "--num-fewshot", min=0, help="lm-eval's form of --shots N.")
]
TrustRemoteCodeOption = Annotated[bool, typer.Option(help="hf: run code shipped with the model.")]
BosOption = Annotated[
    BosName,
    typer.Option(
        help="hf: start tokens: always BOS (else EOS), TAPE's; or as lm-eval's HFLM: tokenizer (default), true, false."
    ),
]
RevisionOption = Annotated[str | None, typer.Option(help="hf: a hub branch, tag or commit.")]
DeviceMapOption = Annotated[
    DeviceMapName | None,
    typer.Option(help="hf: auto spreads the weights over the GPUs (accelerate); --device is then unused."),
]
PeftOption = Annotated[
    Path | None,
    typer.Option(help="hf: a PEFT adapter directory to merge into the weights (pip install 'rueval[peft]')."),
]
LoadInOption = Annotated[
    LoadInName | None, typer.Option(help="hf: quantize the weights on a CUDA GPU (pip install 'rueval[quantize]').")
]
TokenizerOption = Annotated[
    str,
    typer.Option(
        help="openai: where prompts' token ids come from: the served model's tokenizer (a path or hub id); auto: "
        "the server's own if it can be had, else text prompts, with a warning; server: the server's own or an "
        "error; text: text prompts, tokenized by the server (scores may differ from hf:'s)."
    ),
]
ConcurrencyOption = Annotated[int, typer.Option(min=1, help="openai: HTTP requests in flight per server.")]
TimeoutOption = Annotated[
    float,
    typer.Option(min=0.001, help="openai: seconds one HTTP request may take, retries included, before the run stops."),
]
CacheOption = Annotated[
    CacheMode, typer.Option(help="LMs: the on-disk request cache; refresh computes every request again and overwrites.")
]
FilterModelOption = Annotated[
    str | None,
    typer.Option(
        help="Semantic filter: BERTScore with this encoder. Default: TAPE's bert-base-multilingual-cased when it "
        "is in the Hugging Face cache, else character 3-gram similarity.",
    ),
]
FilterThresholdOption = Annotated[
    float | None,
    typer.Option(min=0, max=1, help="Semantic filter: least similarity. Default 0.6 (BERTScore 0.8, TAPE's)."),
]
FilterMinShareOption = Annotated[
    float, typer.Option(min=0, max=1, help="Semantic filter: lower the threshold until this share passes (TAPE: 0).")
]
TranslationModelOption = Annotated[
    str | None, typer.Option(help="back_translation: RU_EN,EN_RU seq2seq models (default Helsinki-NLP opus-mt).")
]
AddsentModelOption = Annotated[str | None, typer.Option(help="add_sent: a transformers causal LM, name or path.")]
FtEpochsOption = Annotated[float, typer.Option("--ft-epochs", min=0.01, help="finetune: epochs (jiant: 10).")]
FtLrOption = Annotated[float, typer.Option("--ft-lr", min=0, help="finetune: learning rate (jiant: 1e-5).")]
FtBatchSizeOption = Annotated[int, typer.Option("--ft-batch-size", min=1, help="finetune: batch size per process.")]
FtMaxLengthOption = Annotated[int, typer.Option("--ft-max-length", min=8, help="finetune: tokens per input.")]
FtSeedOption = Annotated[int | None, typer.Option("--ft-seed", help="finetune: training seed. Default: --seed.")]
FtAccumulationOption = Annotated[int, typer.Option("--ft-grad-accum", min=1, help="finetune: gradient accumulation.")]
FtPrecisionOption = Annotated[str, typer.Option("--ft-precision", help="finetune: fp32, or fp16/bf16 on a GPU.")]
FtHeldoutOption = Annotated[
    float, typer.Option("--ft-heldout", min=0, max=0.99, help="finetune: share of train held out to pick the model.")
]
FtSaveOption = Annotated[Path | None, typer.Option("--ft-save", help="finetune: also save each task's model here.")]
ApplyChatTemplateOption = Annotated[
    bool,
    typer.Option(
        "--apply-chat-template",
        "--apply_chat_template",
        help="hf: render prompts through the tokenizer's chat template (lm-eval's option).",
    ),
]
SystemInstructionOption = Annotated[
    str | None,
    typer.Option(
        "--system-instruction",
        "--system_instruction",
        help="LMs: a system instruction before every prompt (a system turn with a template).",
    ),
]
FewshotAsMultiturnOption = Annotated[
    bool,
    typer.Option(
        "--fewshot-as-multiturn",
        "--fewshot_as_multiturn",
        help="hf, with --apply-chat-template: demonstrations as user/assistant turns.",
    ),
]
ChatScoringOption = Annotated[
    ChatScoringName,
    typer.Option(help="openai-chat: score options by prompt logprobs, or generate and match the answer; auto: ask."),
]
LogSamplesOption = Annotated[
    bool,
    typer.Option(
        "--log-samples",
        "--log_samples",
        help="Write OUT/samples/samples_<task>_<date id>.jsonl: every example's prompts, scores and metrics "
        "(lm-eval's name and shape).",
    ),
]
PredictOnlyOption = Annotated[
    bool,
    typer.Option(
        "--predict-only",
        "--predict_only",
        help="Predict and write the predictions without scoring them (lm-eval's flag); by default test. "
        "A split without answers is always predicted, not scored.",
    ),
]
TapeSetOption = Annotated[
    TapeSetName,
    typer.Option(help="TAPE: score its episodes test sets (the paper's tables) or every raw record."),
]
MaxLineOption = Annotated[
    float, typer.Option("--max-line-mb", min=0.001, help="Refuse data lines longer than this many MB (hostile input).")
]
MaxFileOption = Annotated[
    float, typer.Option("--max-file-mb", min=0.001, help="Refuse data files (zip members: inflated) larger.")
]
MaxLinesOption = Annotated[int, typer.Option("--max-lines", min=1, help="Refuse data files with more lines.")]
MaxBlankLinesOption = Annotated[
    int, typer.Option("--max-blank-lines", min=1, help="Refuse data files with more blank lines.")
]
RunOutOption = Annotated[
    Path | None, typer.Option("--out", "-o", "--output_path", help="Output directory. Default: runs/<model>.")
]
SlicesOption = Annotated[
    str | None, typer.Option(help="Score per TAPE subpopulation: all, or comma-separated slice names.")
]
PerturbOption = Annotated[
    str | None,
    typer.Option(help="Also score perturbed examples and attack success rates: all, or NAME[:RATE],..."),
]
ForceOption = Annotated[
    bool, typer.Option(help="Replace another run's results in OUT (by default the run stops before any work).")
]
ResumeOption = Annotated[
    bool, typer.Option(help="Continue the interrupted run in OUT (-o) with the options it was started with.")
]
RunDirsArgument = Annotated[list[Path], typer.Argument(help="Run directories (each with a results.json).")]


def parse_shots(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        shots = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise RuevalError(f"--shots {text}: expected comma-separated numbers of demonstrations, e.g. 0,1,4,8") from None
    if not shots or any(k < 0 for k in shots):
        raise RuevalError(f"--shots {text}: expected comma-separated non-negative numbers, e.g. 0,1,4,8")
    return shots


def _solver_options(
    model_args: ModelArgsOption = None,
    fallback: FallbackOption = FallbackName.majority,
    rules: RulesOption = RuleChoice.fitted,
    scoring: ScoringOption = ScoringName.loglik,
    device: DeviceOption = None,
    dtype: DtypeOption = DtypeName.auto,
    batch_size: BatchSizeOption = "auto",
    trust_remote_code: TrustRemoteCodeOption = False,
    bos: BosOption = BosName.always,
    revision: RevisionOption = None,
    device_map: DeviceMapOption = None,
    peft: PeftOption = None,
    load_in: LoadInOption = None,
    cache: CacheOption = CacheMode.on,
    base_url: BaseUrlOption = None,
    concurrency: ConcurrencyOption = 8,
    tokenizer: TokenizerOption = "auto",
    timeout: TimeoutOption = 300.0,
    chat_scoring: ChatScoringOption = ChatScoringName.auto,
    apply_chat_template: ApplyChatTemplateOption = False,
    system_instruction: SystemInstructionOption = None,
    fewshot_as_multiturn: FewshotAsMultiturnOption = False,
    gen_kwargs: GenKwargsOption = None,
    ft_epochs: FtEpochsOption = 10.0,
    ft_lr: FtLrOption = 1e-5,
    ft_batch_size: FtBatchSizeOption = 4,
    ft_max_length: FtMaxLengthOption = 256,
    ft_seed: FtSeedOption = None,
    ft_grad_accum: FtAccumulationOption = 1,
    ft_precision: FtPrecisionOption = "fp32",
    ft_heldout: FtHeldoutOption = 0.1,
    ft_save: FtSaveOption = None,
) -> None:
    """The solver's options (-m): its family takes those it knows (rueval.solvers.options)."""


def _robustness_options(
    filter_model: FilterModelOption = None,
    filter_threshold: FilterThresholdOption = None,
    filter_min_share: FilterMinShareOption = 0.0,
    translation_model: TranslationModelOption = None,
    addsent_model: AddsentModelOption = None,
) -> None:
    """The semantic filter's and the model-based perturbations' options (--perturb, rueval perturb)."""


def _read_limits(
    max_line_mb: MaxLineOption = 20.0,
    max_file_mb: MaxFileOption = 1024.0,
    max_lines: MaxLinesOption = 1_000_000,
    max_blank_lines: MaxBlankLinesOption = 100_000,
) -> None:
    """How much of each data file is read (hostile input): a file past a limit is refused naming its option."""


# Any: a command's parameter defaults to a group, which `grouped` replaces with the GroupValues it is declared as
SOLVER_OPTIONS: Any = OptionGroup.of(_solver_options)
ROBUSTNESS_OPTIONS: Any = OptionGroup.of(_robustness_options)
READ_LIMITS: Any = OptionGroup.of(_read_limits)


class ReadLimits(TypedDict):
    max_line_bytes: int
    max_file_bytes: int
    max_lines: int
    max_blank_lines: int


def read_limits(limits: GroupValues) -> ReadLimits:
    """The read-limit options as RunSpec's fields."""
    given = limits.values
    return {
        "max_line_bytes": megabytes(given["max_line_mb"], "--max-line-mb"),
        "max_file_bytes": megabytes(given["max_file_mb"], "--max-file-mb"),
        "max_lines": given["max_lines"],
        "max_blank_lines": given["max_blank_lines"],
    }


def megabytes(value: float, option: str) -> int:
    """An option's megabytes (MiB) in bytes; an infinite number is one line naming the option."""
    if not math.isfinite(value):
        raise RuevalError(f"{option} {value}: expected a number of megabytes")
    return int(value * 2**20)
