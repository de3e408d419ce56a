"""Mentions in running text: quantities, capitalised spans, quoted spans and Korean noun phrases.

All of them are read from the prose view, so nothing inside code, URLs or link syntax is picked up.
A single Title-case word at the start of a sentence (``Latency is high``) is kept only when the same word is
also used mid-sentence or is already known, since sentence-initial capitals say nothing about names.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from engramrag.extract.builder import ExtractionBuilder
from engramrag.extract.kinds import guess_kind, looks_like_person_name
from engramrag.extract.korean import honorific_after, looks_like_korean_name, noun_phrases
from engramrag.extract.quantities import find_quantities
from engramrag.extract.structure import is_generic_heading
from engramrag.extract.textutil import normalise_label, span_at
from engramrag.vault.document import Document

_TOKEN = r"(?:[A-Z][A-Za-z0-9]*(?:[.+\-][A-Za-z0-9]+)*|[a-z]+[A-Z][A-Za-z0-9]*)"
CAPITALISED = re.compile(rf"(?<![A-Za-z0-9_.\-/@#]){_TOKEN}(?: {_TOKEN})*(?![A-Za-z0-9_])")
QUOTED = (
    re.compile(r'"([^"\n]{2,80})"'),
    re.compile(r"“([^”\n]{1,80})”"),
    re.compile(r"(?<![A-Za-z])‘([^’\n]{1,80})’"),
    re.compile(r"「([^」\n]{1,80})」"),
    re.compile(r"『([^』\n]{1,80})』"),
)
MAX_QUOTED_WORDS = 6
PERSON_CUE = re.compile(
    r" (?:said|says|wrote|writes|asked|asks|noted|notes|agreed|agrees|suggested|suggests|proposed|proposes|"
    r"mentioned|mentions|thinks|thought|joined|reviewed|reviews|approved|approves)(?![A-Za-z])"
)
LINE_START = re.compile(r"(?:^|[.!?:;。]\s*|\n)[ \t]*(?:(?:#{1,6}|>|[-*+]|\d+[.)]|\[[ xX]\])[ \t]+)*[*_\"'“(「]*$")
STOPWORDS = frozenset(
    (
        "The", "This", "That", "These", "Those", "There", "Here", "We", "I", "It", "Its", "A", "An", "In", "On", "At",
        "If", "When", "Then", "But", "And", "Or", "So", "As", "For", "To", "Of", "By", "With", "From", "After",
        "Before", "Also", "All", "Some", "Any", "Each", "Every", "Our", "Your", "Their", "My", "His", "Her", "He",
        "She", "They", "You", "What", "Why", "How", "Who", "Whom", "Which", "Where", "Yes", "No", "Not", "Please",
        "Note", "See", "Use", "Using", "Used", "Today", "Yesterday", "Tomorrow", "Now", "Next", "Last", "First",
        "Second", "Third", "Finally", "However", "Because", "Since", "While", "Although", "Though", "Once", "Only",
        "Just", "Maybe", "Perhaps", "Let", "Do", "Does", "Did", "Is", "Are", "Was", "Were", "Be", "Been", "Has",
        "Have", "Had", "Will", "Would", "Should", "Could", "Can", "May", "Might", "Must", "Until", "Unless", "Both",
        "Either", "Neither", "Most", "Many", "Much", "More", "Less", "Other", "Another", "Such", "Same", "Very",
        "Instead", "Otherwise", "Therefore", "Thus", "Hence", "Still", "Yet", "Even", "Again", "Always", "Never",
        "Sometimes", "Often", "Per", "Via", "Into", "Onto", "Over", "Under", "About", "Above", "Below", "Between",
        "Among", "Without", "Within", "Against", "During", "Through", "Add", "Added", "Fix", "Fixed", "Update",
        "Updated", "Remove", "Removed", "Make", "Run", "Set", "Get", "Keep", "Move", "Check", "Read", "Write",
        "Create", "Open", "Close", "Start", "Stop", "TODO", "FIXME", "NOTE", "TBD", "FYI", "OK", "Okay", "Hi",
        "Hello", "Thanks", "Dear", "Re", "Mr", "Mrs", "Ms", "Dr", "Monday", "Tuesday", "Wednesday", "Thursday",
        "Friday", "Saturday", "Sunday", "January", "February", "March", "April", "June", "July", "August",
        "September", "October", "November", "December", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Jan", "Feb",
        "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec",
        # Interjections that are never part of a name: in chat logs "Hey Caroline" and "Congrats Caroline" are
        # the speaker's name, not entities of their own.
        "Hey", "Hiya", "Howdy", "Bye", "Goodbye", "Wow", "Whoa", "Oh", "Ooh", "Ah", "Aw", "Aww", "Yay", "Yeah",
        "Yep", "Yup", "Nope", "Nah", "Hmm", "Um", "Uh", "Ugh", "Haha", "Hahaha", "Lol", "Omg", "Oops", "Congrats",
        "Congratulations", "Thank", "Thx", "Cheers", "Sorry", "Cool", "Awesome", "Nice", "Amazing", "Sure",
        "Absolutely", "Totally", "Definitely", "Exactly", "Honestly", "Alright", "Anyway", "Anyways", "Btw", "Tbh",
    )
)  # fmt: skip


def extract_mentions(document: Document, builder: ExtractionBuilder, prose: str) -> None:
    start = document.body_start
    quantities = [(a, b) for a, b in find_quantities(prose, start) if _clean(document, prose, a, b)]
    for q_start, q_end in quantities:
        builder.entity(prose[q_start:q_end], "Quantity", span_at(document, q_start, q_end))
    _capitalised(document, builder, prose, quantities)
    _quoted(document, builder, prose)
    for label, p_start, p_end in noun_phrases(prose, start):
        if is_generic_heading(label) or not _clean(document, prose, p_start, p_end):
            continue
        kind = guess_kind(label)
        if kind == "Concept" and looks_like_korean_name(label) and honorific_after(prose, p_end):
            kind = "Person"
        builder.entity(label, kind, span_at(document, p_start, p_end), explicit=kind == "Person")


def _capitalised(document: Document, builder: ExtractionBuilder, prose: str, quantities: list[tuple[int, int]]) -> None:
    tentative: list[tuple[str, int, int]] = []
    confirmed: set[str] = set()
    for match in CAPITALISED.finditer(prose, document.body_start):
        for start, end in _segments(prose, match.start(), match.end()):
            if _overlaps(quantities, start, end):
                continue
            label = prose[start:end]
            if len(label) < 2 or label.isdigit() or is_generic_heading(label):
                continue
            if not _clean(document, prose, start, end):
                continue
            if " " not in label and guess_kind(label) == "Concept" and _starts_sentence(prose, start):
                tentative.append((label, start, end))
                continue
            confirmed.add(normalise_label(label))
            _add(document, builder, prose, label, start, end)
    for label, start, end in tentative:
        if normalise_label(label) in confirmed or builder.key_for(label) is not None:
            _add(document, builder, prose, label, start, end)


def _clean(document: Document, prose: str, start: int, end: int) -> bool:
    """Whether the candidate is plain text: a mention that spans masked markup, code or link syntax is not one."""
    return prose[start:end] == document.text[start:end]


def _overlaps(ranges: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``[start, end)`` overlaps one of the sorted, non-overlapping ``ranges``."""
    index = bisect_left(ranges, (end, end))
    return index > 0 and ranges[index - 1][1] > start


def _starts_sentence(text: str, position: int) -> bool:
    return bool(LINE_START.search(text, max(0, position - 80), position))


def _segments(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The runs of a capitalised match left after removing stopword tokens (``The Data Team`` → ``Data Team``)."""
    segments: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for token in re.finditer(r"\S+", text[start:end]):
        token_start, token_end = start + token.start(), start + token.end()
        if token.group() in STOPWORDS:
            if current:
                segments.append(current)
            current = None
        else:
            current = (current[0], token_end) if current else (token_start, token_end)
    if current:
        segments.append(current)
    return segments


def _add(document: Document, builder: ExtractionBuilder, prose: str, label: str, start: int, end: int) -> None:
    kind = guess_kind(label)
    explicit = kind == "Concept" and looks_like_person_name(label) and bool(PERSON_CUE.match(prose, end))
    builder.entity(label, "Person" if explicit else kind, span_at(document, start, end), explicit=explicit)


def _quoted(document: Document, builder: ExtractionBuilder, prose: str) -> None:
    for pattern in QUOTED:
        for match in pattern.finditer(prose, document.body_start):
            start, end = match.span(1)
            while start < end and prose[start].isspace():
                start += 1
            while end > start and prose[end - 1].isspace():
                end -= 1
            label = prose[start:end]
            if not _clean(document, prose, start, end):
                continue
            if not any(ch.isalpha() for ch in label) or len(label.split()) > MAX_QUOTED_WORDS:
                continue
            if is_generic_heading(label):
                continue
            builder.entity(label, guess_kind(label), span_at(document, start, end))
