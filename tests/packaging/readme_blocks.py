"""The code blocks of one section of a README, so CI can run a README's examples as a user would."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# A python block whose first line is "# <name>.py" is a file for the reader to save, not code to run.
_FILE_HEADER = re.compile(r"# (?P<name>[\w.-]+\.py)\n")


@dataclass(frozen=True)
class Block:
    language: str
    code: str

    @property
    def file_name(self) -> str | None:
        """The name a ``python`` block asks to be saved as, or None for code to run."""
        match = _FILE_HEADER.match(self.code)
        return match["name"] if match and self.language == "python" else None


def section(markdown: str, heading: str) -> str:
    """The text under ``## <heading>`` up to the next heading of level one or two outside code blocks.

    Raises:
        LookupError: no such heading (a renamed section must not silently run nothing).
    """
    lines: list[str] | None = None
    in_code = False
    for line in markdown.splitlines(keepends=True):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,2} ", line):
            if lines is not None:
                break
            if line.rstrip("\n") == f"## {heading}":
                lines = []
                continue
        if lines is not None:
            lines.append(line)
    if lines is None:
        raise LookupError(f"no section '## {heading}'")
    return "".join(lines)


def blocks(markdown: str, language: str) -> list[Block]:
    """The fenced blocks of ``language`` (``python``, ``console``...), in order."""
    return [Block(m[1], m[2]) for m in _FENCE.finditer(markdown) if m[1] == language]


def console_commands(block: Block) -> list[str]:
    """The commands of a ``console`` block: its lines that start with ``$ ``."""
    return [line[2:] for line in block.code.splitlines() if line.startswith("$ ")]
