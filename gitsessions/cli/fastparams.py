"""Option values converted without pydantic: typer (0.29) builds a pydantic TypeAdapter
for every option it converts, and importing pydantic alone costs more than the rest of
`gitsessions list`.

Invariant: only the plain shapes our commands use take the fast path (`str`, `int`,
`float`, `Path`, `bool`, each optionally `| None`; `min`/`max` on numbers; no parser, no path
checks, no clamp; and variadic `list[str]`); every other parameter keeps typer's own
conversion. Error messages
read as typer's ("Input should be greater than or equal to 1"). Uses typer's internal
`_runtime_param` slot; `tests/test_startup.py` runs every command's options through it.
"""

import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from typer import BadParameter
from typer._coercion import RuntimeParam
from typer.core import _TyperParameter

PLAIN: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    Path: "path",
    bool: "boolean",
}


def plain_type(annotation: Any) -> Any | None:
    """`int` for `int` or `int | None`; None for anything else."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        annotation = args[0] if len(args) == 1 else None
    return annotation if annotation in PLAIN else None


class PlainParam(RuntimeParam):
    """A plain value of type `kind`. Not a dataclass of its own (nor is `WordsParam`):
    generating one costs a millisecond of every command's start."""

    kind: Any

    def __init__(self, parameter_info: Any, annotation: Any, kind: Any = str) -> None:
        super().__init__(parameter_info, annotation)
        object.__setattr__(self, "kind", kind)  # frozen, as the dataclass it extends

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        kind = self.kind
        if kind is bool:
            if isinstance(value, bool):
                return value
            raise BadParameter(
                f"Input should be a valid boolean, got {value!r}", ctx=ctx, param=param
            )
        if kind is str or kind is Path:
            return kind(value)
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise BadParameter(
                f"Input should be a valid {PLAIN[kind]}, unable to parse {value!r} as one",
                ctx=ctx,
                param=param,
            ) from None
        info = self.parameter_info
        if info.min is not None and number < info.min:
            raise BadParameter(
                f"Input should be greater than or equal to {info.min}", ctx=ctx, param=param
            )
        if info.max is not None and number > info.max:
            raise BadParameter(
                f"Input should be less than or equal to {info.max}", ctx=ctx, param=param
            )
        return number


def _words(annotation: Any) -> bool:
    """`list[str]` or `list[str] | None` (variadic words: `push [REMOTE] [ID ...]`)."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        annotation = args[0] if len(args) == 1 else None
    return get_origin(annotation) is list and get_args(annotation) == (str,)


class WordsParam(RuntimeParam):
    """Variadic words as a list of strings, as typer's adapter makes them."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        return [str(word) for word in value]


def speed_up(command: Any) -> None:
    """Give every plain parameter of `command` (its --help too) the fast conversion."""
    if getattr(command, "_gitsessions_fast", False):
        return
    original = command.get_params

    def get_params(ctx: Any) -> list[Any]:
        params = original(ctx)
        convert_fast(params)
        return params

    command.get_params = get_params
    command._gitsessions_fast = True


def convert_fast(params: list[Any]) -> None:
    for param in params:
        if not isinstance(param, _TyperParameter) or param._runtime_param is not None:
            continue
        descriptor = param.type_descriptor
        info = descriptor.parameter_info
        kind = plain_type(descriptor.annotation)
        simple = (
            kind is not None
            and info.parser is None
            and not info.clamp
            and not info.exists
            and not info.resolve_path
            and descriptor.file_annotation is None
            and (kind in (int, float) or (info.min is None and info.max is None))
        )
        if simple:
            param._runtime_param = PlainParam(info, descriptor.annotation, kind)
        elif _words(descriptor.annotation) and info.parser is None:
            param._runtime_param = WordsParam(info, descriptor.annotation)
