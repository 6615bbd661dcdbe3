"""Unknown keyword arguments of the public API refused as Python refuses them, naming the nearest parameter
(``create_table(primary_key=...)``: did you mean 'primary_keys'?)."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

__all__ = ["suggest_keywords", "unexpected_keyword"]

P = ParamSpec("P")
R = TypeVar("R")

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def unexpected_keyword(function: str, name: str, known: Iterable[str]) -> str:
    """Python's message for an unknown keyword argument, with the nearest known name when one is close."""
    message = f"{function}() got an unexpected keyword argument {name!r}"
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return message + (f"; did you mean {close[0]!r}?" if close else "")


def suggest_keywords(function: Callable[P, R]) -> Callable[P, R]:
    """``function``, refusing an unknown keyword argument with :func:`unexpected_keyword`'s message
    (``TypeError``, as Python would) before it runs; unchanged when it takes ``**kwargs``."""
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return function
    names = frozenset(p.name for p in parameters if p.kind in _NAMED)

    @functools.wraps(function)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        if kwargs:
            unknown = kwargs.keys() - names
            if unknown:
                raise TypeError(unexpected_keyword(function.__qualname__, min(unknown), names))
        return function(*args, **kwargs)

    return checked
