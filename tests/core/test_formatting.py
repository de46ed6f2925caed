"""The bounded formatter: MERA's ``instruction.format(**inputs)`` fills plain fields only, and no format
spec or text from data may ask for gigabytes."""

from __future__ import annotations

import tracemalloc

import pytest

from rueval.core.formatting import MAX_TEXT, MAX_WIDTH, FormatError, fill, printf

INPUTS = {"premise": "Девушка покраснела.", "choice1": "Она выпила воды.", "choice2": "Ей сделали комплимент."}


def test_an_instruction_fills_as_str_format_fills_it():
    instructions = ("{premise} Что было причиной?\n1. {choice1}\n2. {choice2}", "{premise:>30}|{choice1!r}", "{{}}")
    for instruction in instructions:
        assert fill(instruction, INPUTS) == instruction.format(**INPUTS)


@pytest.mark.parametrize(
    ("instruction", "field", "message"),
    [
        ("{premise.nope}", "premise.nope", "more than a field name"),
        ("{premise.__class__.__mro__}", "premise.__class__.__mro__", "more than a field name"),
        ("{premise[0]}", "premise[0]", "more than a field name"),
        ("{}", "0", "positional"),
        ("{0}", "0", "positional"),
        ("{hypothesis}", "hypothesis", "not among the fields"),
        ("{premise:>1500000000}", "premise", f"above {MAX_WIDTH}"),
        ("{premise:.1500000000}", "premise", f"above {MAX_WIDTH}"),
        ("{premise:{choice1}}", "premise", "format spec"),
        ("{premise:d}", "premise", "Unknown format code"),
    ],
)
def test_an_instruction_that_names_more_than_a_field_is_one_error_naming_the_field(instruction, field, message):
    with pytest.raises(FormatError, match=message) as refused:
        fill(instruction, INPUTS)
    assert refused.value.field == field and "\n" not in str(refused.value)


def test_an_instruction_that_is_no_template_is_an_error():
    for instruction in ("{premise", "premise}", "{premise!x}"):
        with pytest.raises(FormatError):
            fill(instruction, INPUTS)


def test_a_filled_text_is_refused_before_it_passes_the_bound():
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="would pass"):
            fill("{premise:>9999}" * 10**5, INPUTS)  # each field within bounds, 1e9 characters in all
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 * MAX_TEXT


def test_printf_formats_as_python_within_bounds():
    for template, values in [("%s и %5.2f%%", ("x", 2.5)), ("%(a)s-%(b)03d", {"a": "x", "b": 7}), ("%s", {"a": 1})]:
        assert printf(template, values) == template % values
    for template, values in [("%s %s", ("x",)), ("%s", ("x", "y")), ("%(a)s", ("x",))]:
        with pytest.raises(TypeError):
            printf(template, values)
    for template in ("%1500000000s", "%.1500000000f", "%*s"):
        with pytest.raises(FormatError):
            printf(template, (1.5,) if "*" not in template else (1500000000, "x"))
