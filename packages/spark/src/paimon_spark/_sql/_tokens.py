"""A cursor over sqlglot's Spark tokens, for the statements sqlglot's parser leaves as an opaque command
(``SHOW ...``, ``CALL ...``, ``ALTER TABLE ... UNSET TBLPROPERTIES``, ...): their grammar here is a few words,
names, string lists and parenthesised groups, read token by token.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenType

from paimon_spark._sql._errors import SqlError

__all__ = ["Cursor", "tokenize"]

# Token types that carry a name: plain words, quoted identifiers, and keywords used as names (`default`...).
_NAME_TYPES = frozenset({TokenType.VAR, TokenType.IDENTIFIER})


def tokenize(text: str) -> list[Token]:
    """Spark tokens of ``text``.

    Raises:
        SqlError: an unterminated string or quoted identifier.
    """
    try:
        return list(sqlglot.tokenize(text, read="spark"))
    except TokenError as exc:
        raise SqlError(f"cannot read {text!r}: {exc}", text) from None


def _is_word(token: Token) -> bool:
    return token.token_type not in (TokenType.STRING, TokenType.NUMBER, TokenType.IDENTIFIER) and (
        token.text[:1].isalpha() or token.text[:1] == "_"
    )


class Cursor:
    """Reads a statement (or the rest of one) token by token; errors name what was expected and where."""

    def __init__(self, text: str, statement: str | None = None) -> None:
        self.text = text
        self.statement = statement if statement is not None else text
        self.tokens = tokenize(text)
        self.index = 0

    @property
    def current(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def at_end(self) -> bool:
        return self.index >= len(self.tokens) or (
            self.current is not None and self.current.token_type == TokenType.SEMICOLON
        )

    def error(self, expected: str) -> SqlError:
        token = self.current
        where = f"at {token.text!r} (offset {token.start})" if token is not None else "at the end"
        return SqlError(f"expected {expected} {where} in: {self.statement}", self.statement)

    def peek_words(self, count: int) -> list[str]:
        """The next ``count`` tokens as upper-case words (fewer at the end)."""
        words = self.tokens[self.index : self.index + count]
        return [t.text.upper() if _is_word(t) else "" for t in words]

    def accept(self, *words: str) -> bool:
        """Consume ``words`` (case-insensitive) if they come next."""
        if self.peek_words(len(words)) == [w.upper() for w in words]:
            self.index += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(" ".join(words))

    def accept_type(self, token_type: TokenType) -> Token | None:
        token = self.current
        if token is not None and token.token_type == token_type:
            self.index += 1
            return token
        return None

    def expect_type(self, token_type: TokenType, what: str) -> Token:
        token = self.accept_type(token_type)
        if token is None:
            raise self.error(what)
        return token

    def name(self) -> list[str]:
        """A dotted name (``paimon.db.`t$snapshots```) as its parts."""
        parts = [self._part()]
        while self.accept_type(TokenType.DOT):
            parts.append(self._part())
        return parts

    def _part(self) -> str:
        token = self.current
        if token is None or not (token.token_type in _NAME_TYPES or _is_word(token)):
            raise self.error("a name")
        self.index += 1
        return token.text

    def string(self) -> str:
        return self.expect_type(TokenType.STRING, "a quoted string").text

    def strings(self) -> list[str]:
        """``('a', 'b', ...)``."""
        self.expect_type(TokenType.L_PAREN, "'('")
        values = [self.string()]
        while self.accept_type(TokenType.COMMA):
            values.append(self.string())
        self.expect_type(TokenType.R_PAREN, "')'")
        return values

    def group(self) -> str:
        """The text inside a parenthesised group (nested parentheses kept), the parentheses consumed."""
        opening = self.expect_type(TokenType.L_PAREN, "'('")
        depth = 1
        while self.current is not None:
            token = self.current
            self.index += 1
            if token.token_type == TokenType.L_PAREN:
                depth += 1
            elif token.token_type == TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    return self.text[opening.end + 1 : token.start]
        raise self.error("')'")

    def rest(self) -> str:
        """The text from the current token to the end."""
        token = self.current
        return self.text[token.start :].strip().rstrip(";").strip() if token is not None else ""

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error("the end of the statement")


def words(tokens: Sequence[Token], count: int) -> list[str]:
    """The first ``count`` tokens as upper-case words."""
    return [t.text.upper() if _is_word(t) else "" for t in tokens[:count]]
