"""The sandbox every template from data renders in: what task files write renders as lm-eval 0.4.13's
plain environment renders it; the known template-injection payloads and size bombs are each one
jinja2.TemplateError, quickly, within bounded memory, and run nothing."""

from __future__ import annotations

import re
import time
import tracemalloc

import jinja2
import pytest

from rueval.core.formatting import MAX_TEXT
from rueval.core.sandbox import environment

RECORD = {
    "question": "Что притягивает магнит?",
    "choices": {"label": ["A", "B", "C"], "text": ["фольгу", "скрепку", "линейку"]},
    "answers": [{"text": "скрепку", "score": 1}, {"text": "фольгу", "score": 0}],
    "premise": "Девушка покраснела.",
    "instruction": "{premise} Что было причиной?\n1. {choice1}\n2. {choice2}\nОтвет:",
    "inputs": {"premise": "Девушка покраснела.", "choice1": "Она выпила воды.", "choice2": "Ей сделали комплимент."},
    "passage": "  Текст  с  пробелами @highlight\nи переносом.  ",
    "label": 1,
}
# Templates written the way lm-eval's and MERA's task files write theirs (not copied from them).
TASK_FILE_TEMPLATES = [
    "Вопрос: {{question}}\nОтвет:",
    "{{question}}\n{% for label, text in zip(choices.label, choices.text) %}{{label}}. {{text}}\n{% endfor %}Ответ:",
    "{% for text in choices.text %}{{ choices.label[loop.index0] }}) {{ text }}\n{% endfor %}",
    "{{ choices.label | join(', ') }}",
    "{{ answers | map(attribute='text') | join('; ') }}",
    "{{ answers | selectattr('score') | map(attribute='text') | first }}",
    "{% set letters = choices.label %}{{ letters[label] }}",
    "{{ instruction.format(**inputs) }}",
    "{{ instruction.format_map(inputs) | trim }}",
    "{{ passage | regex_replace('@highlight\\n', '- ') | trim }}",
    "{{ passage | regex_replace('\\\\s+', ' ', 2) }}",
    "{{ question | lower }} {{ question | upper }} {{ premise | replace('.', '') }}",
    "{{ choices.text | length }} {{ range(3) | list }} {{ (label + 1) * 2 }} {{ '%s: %d' | format(premise, label) }}",
    "{{ '{:>8}|{:.2f}'.format(question[:5], 3.14159) }} {{ '%-6s|' % 'ab' }}",
    "{{ question ~ ' ' ~ premise }} {{ choices.text[label] if label < 3 else '' }}",
    "{% set ns = namespace(found=false) %}{% for a in answers %}{% if a.score %}{% set ns.found = true %}"
    "{% endif %}{% endfor %}{{ ns.found }}",
    "{% macro option(letter, text) %}({{ letter }}) {{ text }}{% endmacro %}{{ option('A', choices.text[0]) }}",
    "{% set context %}{{ premise }} {{ question }}{% endset %}{{ context | wordwrap(20) | indent(2) | center(60) }}",
    "{{ choices.text | batch(2) | list }} {{ choices.text | slice(2) | list }} {{ choices | dictsort | first }}",
    "Ответ: {{ ['нет', 'да'][label] | capitalize }}\n",
    "{{ '{:,}'.format(146150789) }} {{ dict(population=146150789) }} {{ question.split(' ', 100000) }}",
    "{% macro big(n) %}{{ n * 2 }}{% endmacro %}{{ big(5000000000) }} {{ 'a\tb'.expandtabs(4) }}",
]


def plain_environment() -> jinja2.Environment:
    """lm-eval 0.4.13's own: a plain Environment with its options and filter (lm_eval/utils.py)."""
    plain = jinja2.Environment(loader=jinja2.BaseLoader(), undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    plain.filters["regex_replace"] = lambda string, pattern, repl, count=0: re.sub(pattern, repl, string, count=count)
    return plain


@pytest.mark.parametrize("template", TASK_FILE_TEMPLATES)
def test_what_task_files_write_renders_as_lm_evals_own_environment_renders_it(template):
    context = {**RECORD, "zip": zip}
    expected = plain_environment().from_string(template).render(**context)
    assert environment().from_string(template).render(**context) == expected


def test_the_environment_keeps_lm_evals_options():
    sandbox = environment()
    assert isinstance(sandbox, jinja2.sandbox.ImmutableSandboxedEnvironment)
    assert sandbox.undefined is jinja2.StrictUndefined and sandbox.keep_trailing_newline
    with pytest.raises(jinja2.UndefinedError, match="'nope' is undefined"):
        sandbox.from_string("{{ nope }}").render()
    assert sandbox.from_string("{{ x }}\n").render(x=1) == "1\n"


# The issue's payload, and one of each payload class: the template writes a file if it runs Python.
ISSUE_PAYLOAD = (
    "{{ (text.__class__.__mro__[1].__subclasses__()|selectattr('__name__','equalto','_wrap_close')|first)"
    ".__init__.__globals__.system('id > F') }}"
)
PAYLOADS = [
    ISSUE_PAYLOAD,
    "{{ text.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.system('id > F') }}",
    "{{ joiner.__init__.__globals__.os.system('id > F') }}",
    "{{ namespace.__init__.__globals__.os.system('id > F') }}",
    "{{ lipsum.__globals__['os'].system('id > F') }}",
    "{{ self._TemplateReference__context.cycler.__init__.__globals__.os.system('id > F') }}",
    "{{ text['__class__']['__mro__'] }}",
    "{{ [text] | map(attribute='__class__') | list }}",
    "{{ text | attr('__class__') }}",
    "{{ ((cycler | attr('_' ~ '_init__')) | attr('_' ~ '_globals__'))['os'].system('id > F') }}",
    "{{ ((joiner | attr('_' ~ '_init__')) | attr('_' ~ '_globals__'))['os'].system('id > F') }}",
    "{{ (namespace | attr('_' ~ '_init__')) | attr('_' ~ '_globals__') }}",
    "{{ [text] | selectattr('_' ~ '_class__') | list }}",
    "{{ '{0.__class__.__mro__}'.format(text) }}",
    "{{ '{0._' ~ '_class__}'.format(text) }}",
    "{{ '{t.__init__.__globals__}'.format_map({'t': cycler}) }}",
    "{{ '%s' | format(text.__class__) }}",
    "{{ text.upper.__self__ }}",
    "{{ [].append(1) }}{{ {}.update(a=1) }}",
    "{% set x = text | attr('_' ~ '_class__') %}{{ x.mro() }}",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_injection_payload_is_one_template_error_and_runs_nothing(payload, tmp_path):
    written = tmp_path / "pwned"
    source = payload.replace("id > F", f"id > {written}")
    with pytest.raises(jinja2.TemplateError) as refused:
        environment().from_string(source).render(text="Привет")
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 300
    assert not written.exists()


BOMBS = [
    "{{ 'x' * 10**9 }}",
    "{{ [1] * 10**9 }}",
    "{{ 9 ** 9999999 }}",
    "{{ '{:>1500000000}'.format(text) }}",
    "{{ '{:.1500000000f}'.format(1.5) }}",
    "{{ '%1500000000s' | format(text) }}",
    "{{ '%1500000000s' % text }}",
    "{{ '%*s' % (1500000000, text) }}",
    "{{ text | center(1500000000) }}",
    "{{ text.ljust(1500000000) }}",
    "{{ (1).to_bytes(1500000000, 'big') }}",
    "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
    "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = [ns.s, ns.s] | join %}{% endfor %}",
    "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s %}{{ns.s}}{{ns.s}}{% endset %}{% endfor %}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% for i in range(100000) %}{% for j in range(100000) %}0123456789abcdef{% endfor %}{% endfor %}",
    "{{ text | replace('', 'y' * 9000) | replace('', 'z' * 9000) }}",
    "{{ text | regex_replace('', 'y' * 9000) | regex_replace('', 'z' * 9000) }}",
    "{{ text | wordwrap(1, wrapstring='y' * 9000) | wordwrap(1, wrapstring='z' * 9000) }}",
    "{{ range(100000) | map('string') | join('y' * 9000) }}",
    "{{ ('y' * 9000).join(range(100000) | map('string')) }}",
    "{{ lipsum(10000000) }}",
    "{{ ('\\t' * 9000).expandtabs(9000) }}",
    "{{ ('a' * 9000).translate({97: 'b' * 9000}) }}",
    "{{ (text * 9000).encode().center(1500000000) }}",
]


@pytest.mark.parametrize("bomb", BOMBS)
def test_a_template_cannot_take_gigabytes_or_minutes(bomb):
    tracemalloc.start()
    started = time.process_time()  # CPU time: the machine's load does not count
    try:
        with pytest.raises(jinja2.TemplateError) as refused:
            environment().from_string(bomb).render(text="Привет")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.process_time() - started < 10
    assert peak < 12 * MAX_TEXT  # a few texts at the bound (4 bytes a character at most), not gigabytes
    assert "\n" not in str(refused.value)


def test_whatever_a_template_raises_is_one_template_error_line():
    sandbox = environment()
    for source, message in [
        ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
        ("{{ text | regex_replace('(', '') }}", "error: missing ) at position 1"),
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "RecursionError"),
        ("{% include 'other.yaml' %}", "other.yaml"),
        ("{{ text }} {{ '\\ud800' }}", "UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud800'"),
    ]:
        with pytest.raises(jinja2.TemplateError, match=re.escape(message)):
            sandbox.from_string(source).render(text="x")


def test_a_dunder_name_is_refused_when_the_template_is_compiled_with_its_line():
    with pytest.raises(jinja2.TemplateSyntaxError, match="'__class__': names starting with '__'") as refused:
        environment().from_string("Вопрос:\n{{ text.__class__ }}")
    assert refused.value.lineno == 2


@pytest.mark.parametrize("nesting", ["(" * 5000 + "1" + ")" * 5000, "[" * 3000 + "]" * 3000, "x" + "|lower" * 20000])
def test_a_template_nested_too_deeply_is_a_syntax_error(nesting):
    with pytest.raises(jinja2.TemplateSyntaxError, match="nested too deeply"):
        environment().from_string("{{ " + nesting + " }}")


def test_a_regex_that_backtracks_without_end_is_stopped():
    """A pattern from a task file that backtracks catastrophically on a record's text (ReDoS) is
    stopped after regex_replace's time limit, as one error line."""
    started = time.monotonic()
    with pytest.raises(jinja2.TemplateError, match="took over 1 s on one text") as refused:
        environment().from_string("{{ text | regex_replace('(a|aa)+$', 'x') }}").render(text="a" * 40 + "!")
    assert time.monotonic() - started < 10
    assert "\n" not in str(refused.value)


def test_a_template_is_made_once_and_the_kept_templates_are_bounded():
    """lm-eval makes a task's template again for every document: the sandbox makes each source's template
    once (the same template serves every later from_string, each rendering with its own values), keeps at
    most TEMPLATES_KEPT sources, and a template that is no template fails every time."""
    from rueval.core.sandbox import TEMPLATES_KEPT, Sandbox

    sandbox = Sandbox(loader=jinja2.BaseLoader(), undefined=jinja2.StrictUndefined)
    source = "Вопрос: {{question}}\nОтвет:"
    first, again = sandbox.from_string(source), sandbox.from_string(source)
    assert first is again
    assert first.render(RECORD) == f"Вопрос: {RECORD['question']}\nОтвет:"
    assert again.render(question="другой") == "Вопрос: другой\nОтвет:"
    assert sandbox.from_string(source, globals={"question": "свой"}) is not first  # a template of its own
    for n in range(TEMPLATES_KEPT):
        sandbox.from_string(f"{{{{ question }}}} {n}")
    assert len(sandbox.templates) == TEMPLATES_KEPT
    assert sandbox.from_string(source) is not first
    for _ in range(2):
        with pytest.raises(jinja2.TemplateSyntaxError):
            sandbox.from_string("{{ question ")
