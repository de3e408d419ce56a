"""How text from notes, models and servers is quoted in a message to a person: on one line, cut with an ellipsis."""

from __future__ import annotations


def one_line(value: object, limit: int = 200) -> str:
    """``value`` as text with every run of whitespace (line breaks included) as one space, at most ``limit``
    characters long (the last one an ellipsis when it was cut)."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
