"""The one environment for every template rendered from data (an lm-eval task file's, which lm-eval
renders in it once rueval.tasks.lm_eval_tasks has swapped ``lm_eval.utils.env`` for it): jinja2's
``ImmutableSandboxedEnvironment`` with the options lm-evaluation-harness 0.4.13 gives its own (an
undefined name is an error, a trailing newline is kept, the ``regex_replace`` filter).

What the sandbox refuses: attributes and items starting with ``_`` and Python's internal ones
(``__class__``, ``mro``, ``__globals__``, ``gi_frame``...), from ``.``, ``[]``, the ``attr`` filter,
``attribute=`` arguments and format fields alike; changing a list, dict or set; calling anything
not safe to call. A template naming a ``__dunder__`` attribute is refused when it is compiled. On top
of jinja2's sandbox every rendering is bounded (rueval.core.formatting): format specs (``|format``,
``%``, ``.format``, ``.format_map``), the texts and lists that ``*``, ``+``, ``~``, filters and method
calls build, loop iterations, and the rendered text, so a template cannot take gigabytes or hours.
Whatever a template raises comes out as one ``jinja2.TemplateError`` line.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sized
from contextvars import ContextVar
from functools import cache, wraps
from itertools import islice
from typing import Any

import jinja2
import regex
from jinja2 import filters, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import FilterArgumentError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter, SecurityError

from rueval.core.formatting import MAX_TEXT, MAX_WIDTH, BoundedFormatter, FormatError, Length, printf

MAX_STEPS = 1_000_000  # loop iterations in one rendering
REGEX_TIMEOUT_S = 1.0  # one regex_replace on one text
MAX_BUFFERED = 8 * MAX_TEXT  # characters captured by {% set %} blocks, macros and calls in one rendering
MAX_INT_BITS = 2**16  # an integer that * or ** may build
TEMPLATES_KEPT = 256  # templates made from sources kept, the least recently used dropped first
WIDTH_METHODS = ("center", "ljust", "rjust", "zfill", "to_bytes")  # a method whose size argument sizes its result
ATTRIBUTE_FILTERS = ("attr", "selectattr", "rejectattr", "groupby")  # their first argument names an attribute


class Budget:
    """What one rendering may still spend."""

    def __init__(self) -> None:
        self.steps, self.buffered = 0, Length()

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise FormatError(f"more than {MAX_STEPS} loop iterations")

    def buffer(self, size: int) -> None:
        if self.buffered.total + size > MAX_BUFFERED:
            raise FormatError(f"more than {MAX_BUFFERED} characters captured")
        self.buffered.total += size


_budget: ContextVar[Budget | None] = ContextVar("rueval_template_budget", default=None)


def _current() -> Budget:
    return _budget.get() or Budget()  # outside render() (generate()), each loop and buffer is bounded alone


def _checked(value: Any) -> Any:
    """``value`` if it is within bounds: a text, list or mapping of at most MAX_TEXT items, a small integer."""
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise FormatError(f"an integer of more than {MAX_INT_BITS} bits")
    if isinstance(value, Sized) and not isinstance(value, range) and len(value) > MAX_TEXT:
        raise FormatError(f"a text or list of more than {MAX_TEXT} items")
    return value


def _arguments(*values: Any) -> None:
    """Sizes and widths passed to a filter or method stay within MAX_WIDTH (center, ljust, zfill, to_bytes...)."""
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_WIDTH:
            raise FormatError(f"a width or count of {value} (at most {MAX_WIDTH})")


def _replaced_size(text: str, old: str, new: str, count: int | None = None) -> None:
    occurrences = len(text) + 1 if not old else text.count(old)
    occurrences = occurrences if count is None or count < 0 else min(count, occurrences)
    Length(len(text) + occurrences * max(len(new) - len(old), 0))


def _joined_size(items: list[Any], separator: str) -> None:
    Length(sum(len(str(item)) for item in items) + len(separator) * max(len(items) - 1, 0))


def regex_replace(string: str, pattern: str, repl: str, count: int = 0) -> str:
    """lm-eval's ``regex_replace`` filter (``re.sub``), refused before it runs if its result could pass
    the bound: each match adds at most the replacement, and each group reference the whole text. The
    ``regex`` module reads ``re``'s syntax and stops a pattern that backtracks without end (ReDoS)."""
    compiled = regex.compile(pattern)
    try:
        matches = sum(1 for _ in islice(compiled.finditer(string, timeout=REGEX_TIMEOUT_S), count or None))
        Length(len(string) + matches * len(repl) + repl.count("\\") * len(string))
        return str(compiled.sub(repl, string, count=count, timeout=REGEX_TIMEOUT_S))
    except TimeoutError:
        raise FormatError(f"regex_replace: the pattern took over {REGEX_TIMEOUT_S:g} s on one text") from None


@jinja2.pass_eval_context
def _join(eval_ctx: Any, value: Iterable, d: str = "", attribute: Any = None) -> str:
    if attribute is not None:
        value = map(filters.make_attrgetter(eval_ctx.environment, attribute), value)
    items = list(value)
    _joined_size(items, d)
    return filters.do_join(eval_ctx, items, d)


def _replace(eval_ctx: Any, s: str, old: str, new: str, count: int | None = None) -> str:
    _replaced_size(str(s), str(old), str(new), count)
    return filters.do_replace(eval_ctx, s, old, new, count)


def _format(value: str, *args: Any, **kwargs: Any) -> str:
    if args and kwargs:
        raise FilterArgumentError("can't handle positional and keyword arguments at the same time")
    return printf(str(value), kwargs or args)


def _indent(s: str, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    _arguments(width)
    Length(len(str(s)) + (str(s).count("\n") + 1) * (width if isinstance(width, int) else len(width)))
    return filters.do_indent(s, width, first, blank)


def _wordwrap(environment: Any, s: str, width: int = 79, wrap: bool = True, wrapstring: Any = None, **rest: Any) -> str:  # noqa: E501
    s = str(s)
    lines = len(s) // max(int(width), 1) + 1 + s.count("\n")
    Length(len(s) + lines * len(wrapstring if wrapstring is not None else environment.newline_sequence))
    return filters.do_wordwrap(environment, s, width, wrap, wrapstring, **rest)


def _with_sized_arguments(function: Callable) -> Callable:
    @wraps(function)
    def sized(*args: Any, **kwargs: Any) -> Any:
        _arguments(*args[1:], *kwargs.values())
        return function(*args, **kwargs)

    return sized


BOUNDED_FILTERS = {
    "join": _join,
    "replace": jinja2.pass_eval_context(_replace),
    "format": _format,
    "indent": _indent,
    "wordwrap": jinja2.pass_environment(_wordwrap),
    **{name: _with_sized_arguments(filters.FILTERS[name]) for name in ("center", "batch", "slice")},
    "regex_replace": regex_replace,
}


def _result_checked(function: Callable) -> Callable:
    @wraps(function)  # keeps jinja2's pass_context / pass_eval_context mark
    def checked(*args: Any, **kwargs: Any) -> Any:
        return _checked(function(*args, **kwargs))

    return checked


class BoundedBuffer(list):
    """The output captured by a {% set %} block, a macro or a call block, counted against the budget."""

    def append(self, piece: Any) -> None:
        _current().buffer(len(str(piece)))
        super().append(piece)

    def extend(self, pieces: Iterable[Any]) -> None:
        for piece in pieces:
            self.append(piece)


class BoundedCodeGenerator(CodeGenerator):
    """jinja2's code generator, with ``__dunder__`` names refused at compile time and loops, ``~`` and
    captured output routed through the sandbox's bounds."""

    def _call(self, method: str, argument: nodes.Expr, lineno: int) -> nodes.Call:
        call = nodes.Call(nodes.EnvironmentAttribute(method), [argument], [], None, None, lineno=lineno)
        call.set_environment(self.environment)
        return call

    def _refuse_dunder(self, name: Any, lineno: int) -> None:
        if isinstance(name, str) and name.startswith("__"):
            self.fail(f"{name!r}: names starting with '__' are not read in a template", lineno)

    def visit_Getattr(self, node: nodes.Getattr, frame: Frame) -> None:
        self._refuse_dunder(node.attr, node.lineno)
        super().visit_Getattr(node, frame)

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if isinstance(node.arg, nodes.Const):
            self._refuse_dunder(node.arg.value, node.lineno)
        super().visit_Getitem(node, frame)

    def visit_Filter(self, node: nodes.Filter, frame: Frame) -> None:
        named = [node.args[0]] if node.name in ATTRIBUTE_FILTERS and node.args else []
        named += [keyword.value for keyword in node.kwargs if keyword.key == "attribute"]
        for argument in named:
            if isinstance(argument, nodes.Const):
                self._refuse_dunder(argument.value, node.lineno)
        super().visit_Filter(node, frame)

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        node.iter = self._call("loop_items", node.iter, node.lineno)  # type: ignore[arg-type]  # an expression
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.visit(self._call("joined", nodes.Tuple(node.nodes, "load", lineno=node.lineno), node.lineno), frame)

    def buffer(self, frame: Frame) -> None:
        frame.buffer = self.temporary_identifier()
        self.writeline(f"{frame.buffer} = environment.bounded_buffer()")


class BoundedTemplate(jinja2.Template):
    def render(self, *args: Any, **kwargs: Any) -> str:
        """The rendered text within the budget; anything the template raises, as one TemplateError line."""
        token = _budget.set(Budget())
        try:
            length, pieces = Length(), []
            for piece in self.generate(*args, **kwargs):
                length.add(len(piece))
                pieces.append(piece)
            text = "".join(pieces)
            if not text.isascii():
                text.encode("utf-8")  # a lone surrogate ('\ud800' in a Jinja string) is no text a model reads
            return text
        except jinja2.TemplateError:
            raise
        except Exception as e:  # noqa: BLE001 - a template's own failure (1/0, a bound, a bad regex)
            message = " ".join(str(e).split())
            raise jinja2.TemplateRuntimeError(f"{type(e).__name__}: {message[:200]}") from None
        finally:
            _budget.reset(token)


class SandboxFormatter(BoundedFormatter, SandboxedFormatter):
    """``.format`` in a template: jinja2's sandboxed field lookup, rueval's bounded specs and length."""


class Sandbox(ImmutableSandboxedEnvironment):
    code_generator_class = BoundedCodeGenerator
    template_class = BoundedTemplate
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.templates: OrderedDict[str, jinja2.Template] = OrderedDict()  # source -> template, most recent last

    def from_string(self, source: Any, globals: Any = None, template_class: Any = None) -> Any:  # noqa: A002
        """The source's template, made once: lm-eval makes a task's template again for every document
        (``from_string`` in its ``apply_template``): compiling it was 9 s of a 1,319-document gsm8k run in this
        sandbox, and making a template of the code a tenth of a second more. Each rendering has a context of
        its own, so one template serves every document, as jinja2's own loader cache shares templates."""
        if globals is not None or template_class is not None or not isinstance(source, str):
            return super().from_string(source, globals, template_class)
        if source in self.templates:
            self.templates.move_to_end(source)
            return self.templates[source]
        template = super().from_string(source)
        self.templates[source] = template
        while len(self.templates) > TEMPLATES_KEPT:
            self.templates.popitem(last=False)
        return template

    def compile(self, source: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().compile(source, *args, **kwargs)
        except RecursionError:  # jinja2's parser and code generator recurse once per level of nesting
            raise jinja2.TemplateSyntaxError("nested too deeply to be compiled", 1) from None

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "%" and isinstance(left, str):
            return printf(left, right)
        if operator == "**" and isinstance(left, int) and isinstance(right, int):
            if right > 0 and left.bit_length() * right > MAX_INT_BITS:
                raise FormatError(f"an integer of more than {MAX_INT_BITS} bits")
        if operator == "*":
            for sequence, times in ((left, right), (right, left)):
                if isinstance(sequence, Sized) and isinstance(times, int):
                    Length(len(sequence) * max(times, 0))
        if operator == "+" and isinstance(left, Sized) and isinstance(right, Sized):
            Length(len(left) + len(right))
        return _checked(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - jinja2's signature
        name, owner = getattr(__obj, "__name__", ""), getattr(__obj, "__self__", None)
        if name in WIDTH_METHODS and owner is not None:
            _arguments(*args, *kwargs.values())
        if isinstance(owner, str) and args:
            if name == "replace":
                count = args[2] if len(args) > 2 else None
                _replaced_size(owner, str(args[0]), str(args[1]) if len(args) > 1 else "", count)
            elif name == "join":
                args = (list(args[0]),)
                _joined_size(args[0], owner)
            elif name == "expandtabs" and isinstance(args[0], int):
                Length(len(owner) + owner.count("\t") * args[0])
            elif name == "translate" and isinstance(args[0], dict):
                longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
                Length(len(owner) * longest)
        return _checked(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if super().wrap_str_format(value) is None:
            return None
        template, format_map = value.__self__, value.__name__ == "format_map"

        def bounded(*args: Any, **kwargs: Any) -> str:
            if format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one mapping")
                return SandboxFormatter(self).vformat(template, (), args[0])
            return SandboxFormatter(self).vformat(template, args, kwargs)

        return bounded

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        """An unsafe attribute is an error where it is read, never an undefined value printed later."""
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe.")

    def loop_items(self, iterable: Iterable) -> Iterator:
        budget = _current()
        for item in iterable:
            budget.step()
            yield item

    def joined(self, pieces: tuple) -> str:
        """``a ~ b ~ c``, within the bound."""
        texts = [str(piece) for piece in pieces]
        Length(sum(map(len, texts)))
        return "".join(texts)

    @staticmethod
    def bounded_buffer() -> BoundedBuffer:
        return BoundedBuffer()


@cache
def environment() -> Sandbox:
    """The sandbox, configured as lm-eval 0.4.13 configures its ``lm_eval.utils.env``; compile with
    ``environment().from_string(source)`` (a TemplateSyntaxError, with its line, when it is not one)."""
    sandbox = Sandbox(loader=jinja2.BaseLoader(), undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    sandbox.filters = {name: _result_checked(f) for name, f in {**sandbox.filters, **BOUNDED_FILTERS}.items()}
    del sandbox.globals["lipsum"]  # Lorem ipsum is no prompt's need, and its size argument is not bounded
    return sandbox
