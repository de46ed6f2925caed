"""The prompt of a task declared as data (a YAML task): Jinja2 templates over the example's fields,
rendered in rueval's sandbox (rueval.core.sandbox) with lm-evaluation-harness's options (undefined
names are errors, a trailing newline is kept). The answers follow the context after the template's
delimiter: a classification task's choices, a choice task's option texts, or a generated answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rueval.core.errors import DataError, RuevalError
from rueval.tasks.base import Example, Template
from rueval.tasks.prompts.base import Choice, Question, TaskPrompt
from rueval.tasks.prompts.common import gold_continuation
from rueval.tasks.shapes import Answer, Shape
from rueval.tasks.shapes import Choice as ChoiceShape

if TYPE_CHECKING:
    import jinja2


def compile_template(source: str) -> jinja2.Template:
    """The template, compiled once in rueval's sandbox; a jinja2.TemplateSyntaxError (with its line) when
    it is not one, or when it names what the sandbox refuses (``__class__``...)."""
    from rueval.core.sandbox import environment  # jinja2, only where a template is compiled

    return environment().from_string(source)


class TemplatePrompt(TaskPrompt):
    def __init__(self, shape: Shape, template: Template):
        self.shape, self.template = shape, template
        self.context = compile_template(template.text)
        self.generated = isinstance(shape, Answer)
        self.max_new_tokens = (template.max_new_tokens, template.max_new_tokens)
        self.stop = template.stop

    def questions(self, example: Example) -> list[Question]:
        import jinja2  # loaded already: the template was compiled with it

        try:
            context = self.context.render(example.fields)
        except jinja2.TemplateError as e:
            message = f"example {example.key}: the prompt template cannot be filled: {e}"
            if self.template.file:
                raise DataError(self.template.file, message, self.template.line, "doc_to_text") from None
            raise RuevalError(message) from None
        delimiter = self.template.delimiter
        if self.generated:
            target = None if example.label is None else delimiter + example.label[0]
            return [Question(context, target=target)]
        if isinstance(self.shape, ChoiceShape):
            texts = [example.text(option) for option in self.shape.options]
        else:
            texts = list(self.template.choices)
        choices = tuple(Choice(delimiter + text, label) for text, label in zip(texts, self.shape.labels, strict=True))
        return [Question(context, choices, gold_continuation(choices, example.label, example))]

    def prediction(self, example: Example, answers: list[Any]) -> Any:
        return str(answers[0]).strip() if self.generated else answers[0]
