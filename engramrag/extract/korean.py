"""Korean noun-phrase candidates without a morphological analyser or model download.

A phrase is a run of whitespace-separated Hangul words ending in a word that carries a particle (josa) or a
copula (``박민지는``, ``데이터 파이프라인을``, ``도구입니다``), or a run of bare nouns closing a line or a list
item. Particles are stripped only where Korean phonology allows them (``이``/``은``/``을``/``과`` after a final
consonant, ``가``/``는``/``를``/``와`` after a vowel), which keeps nouns such as ``차이`` and ``평가`` whole.
"""

from __future__ import annotations

import re

HANGUL_WORD = re.compile(r"[가-힣]+")
WORD = re.compile(r"\S+")
SPACES = re.compile(r" *")
OPENING = "\"'“‘「『([{<*_~"
CLOSING = "\"'”’」』)]}>*_~"
BREAKING = ".,;:!?。、·…"
MAX_TOKENS = 3
LINE_PREFIX = re.compile(r"[ \t]*(?:(?:#{1,6}|>|[-*+]|\d+[.)]|\[[ xX]\])[ \t]+)*")

# (particle, what the stem must end with: "C" a final consonant, "V" a vowel, "VL" a vowel or ㄹ, None either)
PARTICLES: tuple[tuple[str, str | None], ...] = (
    ("에서는", None), ("에서도", None), ("에서의", None), ("에게서", None), ("께서는", None),
    ("으로는", "C"), ("으로도", "C"), ("으로서", "C"), ("으로써", "C"), ("부터는", None), ("까지는", None),
    ("에서", None), ("에게", None), ("한테", None), ("께서", None), ("부터", None), ("까지", None),
    ("처럼", None), ("마다", None), ("끼리", None), ("에는", None), ("에도", None), ("으로", "C"), ("로서", "VL"),
    ("로써", "VL"), ("로는", "VL"), ("과는", "C"), ("와는", "V"), ("은", "C"), ("는", "V"), ("이", "C"),
    ("가", "V"), ("을", "C"), ("를", "V"), ("과", "C"), ("와", "V"), ("로", "VL"), ("의", None),
    ("에", None), ("도", None), ("만", None),
)  # fmt: skip
COPULAS: tuple[tuple[str, str | None], ...] = (
    ("이었습니다", "C"), ("였습니다", "V"), ("입니다", None), ("이었다", "C"), ("이에요", "C"),
    ("이지만", "C"), ("이라는", "C"), ("이라고", "C"), ("이며", None), ("이고", None), ("이다", None),
    ("였다", "V"), ("예요", "V"), ("이란", "C"), ("라는", "V"),
)  # fmt: skip
HONORIFICS = ("님", "씨")
SUBJECT_PARTICLES = ("께서", "은", "는", "이", "가")
OBJECT_PARTICLES = ("을", "를")
PREDICATE_ENDINGS = (
    "습니다", "니다", "한다", "했다", "된다", "됐다", "었다", "았다", "였다", "겠다", "는다", "있다", "없다",
    "하다", "되다", "하고", "하며", "하여", "해서", "하면", "하지", "하게", "하는", "되는", "있는", "없는",
    "했던", "하던", "되어", "되고", "되며", "했고", "했으며", "지만", "는데", "면서", "도록", "려고", "으면",
    "어요", "아요", "해요", "세요", "까요", "나요", "네요", "하기", "되기", "했음", "적으로", "하되",
    "쓰고", "두고", "주고", "했고", "있고", "없고", "였고",
)  # fmt: skip
MODIFIER_ENDINGS = ("한", "된", "할", "될", "게", "히")
PAST_MODIFIER_SYLLABLES = "긴낸친킨힌쓴뀐던"  # 옮긴, 보낸, 바뀐, 하던: verb forms that end like nouns
NOUNS_LIKE_MODIFIERS = ("권한", "기한", "제한", "무한", "한게", "무게")
# Nouns whose last syllable looks like a particle where the phonology check alone does not protect them.
PARTICLE_LIKE_NOUNS = (
    "결과", "성과", "학과", "통과", "경과", "추가", "휴가", "대가", "주가", "고양이", "회의", "논의", "합의",
    "정의", "동의", "협의", "문의", "주의", "토의", "의의", "건의", "강의", "속도", "정도", "온도", "빈도",
    "제도", "한도", "용도", "의도", "태도", "강도", "밀도", "각도", "도로", "회로", "미로", "철로", "불만",
    "천만", "백만", "질의", "시도",
)  # fmt: skip
STOPWORDS = frozenset(
    (
        "이", "그", "저", "것", "수", "등", "및", "또", "또는", "그리고", "하지만", "그러나", "그래서", "따라서",
        "또한", "즉", "단", "이번", "저번", "다음", "지난", "이전", "이후", "모든", "각", "매", "여러", "몇",
        "어떤", "이런", "그런", "저런", "같은", "다른", "많은", "작은", "좋은", "새", "새로운", "큰", "우리",
        "저희", "나", "너", "제", "내", "그것", "이것", "저것", "여기", "거기", "저기", "오늘", "내일", "어제",
        "지금", "이제", "현재", "당시", "항상", "자주", "가끔", "매우", "아주", "너무", "정말", "더", "덜", "가장",
        "잘", "못", "안", "다시", "먼저", "나중", "동안", "때", "중", "후", "전", "경우", "위해", "통해", "대해",
        "관련", "대한", "위한", "통한", "관한", "때문", "정도", "부분", "내용", "사항", "점", "곳", "데", "바",
        "뿐", "아직", "이미", "모두", "전부", "함께", "같이", "하나", "위", "아래", "앞", "뒤", "밖", "사이",
        "기타", "예", "예시", "참고", "주요", "기본", "따라", "따른", "약", "담당", "완료", "예정", "제외", "가능",
        "필요", "불가", "진행", "진행중", "각자", "서로", "직접", "대부분", "일부", "전체", "처음", "마지막",
        "결국", "덕분", "한", "두", "세", "네", "별도", "계속", "바로", "혹은", "특히", "대신",
        # Greetings and interjections of chat logs.
        "안녕", "안녕하세요", "대박", "헐", "와", "우와", "오", "아", "응", "그래", "고마워", "고마워요", "감사",
        "감사합니다", "축하", "축하해", "축하해요", "미안", "미안해", "잘가", "수고", "화이팅", "파이팅",
    )
)  # fmt: skip
SURNAMES = frozenset(
    "김이박최정강조윤장임한오서신권황안송류유전홍고문양손배백허남심노하곽성차주우구민진나지엄채원천방공현"
    "함변염여추도소석선설마길연위표명기반라왕금옥육인맹제모탁국어은편용예경봉사부태목형계피두감음빈동온호"
    "범좌팽승간상갈단견당"
)  # one syllable each
DOUBLE_SURNAMES = ("남궁", "황보", "제갈", "선우", "독고", "사공", "서문")


def noun_phrases(text: str, start: int = 0, end: int | None = None) -> list[tuple[str, int, int]]:
    """Korean noun-phrase candidates in ``text[start:end]`` as ``(label, start, end)`` with
    ``text[start:end] == label``. Bare nouns without a particle count only when they fill a whole line or list
    item (``- 데이터 파이프라인``); in running text the phrase must be closed by a particle or copula."""
    end = len(text) if end is None else end
    found: list[tuple[str, int, int]] = []
    pending: list[tuple[int, int]] = []  # (start, end) of the noun part of each word in the phrase
    pending_fills_line = False
    previous_end = -1
    for match in WORD.finditer(text, start, end):
        word_start, word_end = match.span()
        core_start = word_start + _count_leading(match.group(), OPENING)
        core_end = word_end - _count_trailing(text[core_start:word_end], CLOSING + BREAKING)
        core = text[core_start:core_end]
        if pending and (core_start != word_start or text[previous_end:word_start] != " "):
            pending = []
        previous_end = word_end
        if not core or not HANGUL_WORD.fullmatch(core):
            pending = []
            continue
        stem_length, role = analyse(core)
        if role == "honorific":
            _emit(text, pending[-MAX_TOKENS:], found)
            pending = []
            continue
        if role in ("stop", "predicate"):
            pending = []
            continue
        if not pending:
            pending_fills_line = core_start == word_start and _starts_line(text, word_start)
        pending.append((core_start, core_start + stem_length))
        if role == "marked":
            _emit(text, pending[-MAX_TOKENS:], found)
            pending = []
        elif word_end >= end or text[word_end : word_end + 1] == "\n":
            if pending_fills_line and len(pending) <= MAX_TOKENS:
                _emit(text, pending, found)
            pending = []
        elif core_end != word_end:
            pending = []  # punctuation after a bare noun ends the run: "작성자: 김지훈", "A, B"
    return found


def _starts_line(text: str, position: int) -> bool:
    line_start = text.rfind("\n", 0, position) + 1
    return bool(LINE_PREFIX.fullmatch(text, line_start, position))


def analyse(word: str) -> tuple[int, str]:
    """How much of a Hangul word is noun, and its role: "stop", "predicate", "marked" (particle or copula
    stripped) or "bare"."""
    if word in STOPWORDS:
        return len(word), "stop"
    if word in HONORIFICS:
        return 0, "honorific"
    if any(word == particle for particle, _ in PARTICLES):
        return 0, "stop"  # a particle standing alone, e.g. after a link: "[[팔콘]]의 검색"
    if word.endswith(PARTICLE_LIKE_NOUNS):
        return len(word), "bare"
    for copula, needs in COPULAS:
        stem = word[: -len(copula)]
        if word.endswith(copula) and stem and _fits(stem, needs):
            return len(_strip_honorific(stem)), _marked_or_stop(_strip_honorific(stem))
    if _is_predicate(word):
        return len(word), "predicate"
    for particle, needs in PARTICLES:
        stem = word[: -len(particle)]
        if word.endswith(particle) and stem and _fits(stem, needs) and not _cuts_noun(stem, particle):
            stem = _strip_honorific(stem)
            return len(stem), _marked_or_stop(stem)
    stem = _strip_honorific(word)
    if stem != word:
        return len(stem), _marked_or_stop(stem)
    return len(word), "bare"


def attaches_to_noun(text: str, position: int) -> bool:
    """Whether the Hangul run at ``position`` is only a particle, copula or honorific (so a noun ends here)."""
    match = HANGUL_WORD.match(text, position)
    if not match:
        return True
    rest = match.group()
    for honorific in HONORIFICS:
        if rest.startswith(honorific):
            rest = rest[len(honorific) :]
            break
    return rest == "" or any(rest == p for p, _ in PARTICLES) or any(rest == c for c, _ in COPULAS)


def particle_after(text: str, position: int) -> str | None:
    """The particle glued to a noun that ends at ``position`` (after an optional honorific), if any."""
    gap = len(SPACES.match(text, position).group())
    if gap >= 2 or (gap == 1 and text.startswith(HONORIFICS, position + 1)):
        position += gap  # blanked link syntax (``[[팔콘|팔콘]]의``) or a detached honorific (``정현우 님은``)
    match = HANGUL_WORD.match(text, position)
    if not match:
        return None
    rest = match.group()
    for honorific in HONORIFICS:
        if rest.startswith(honorific) and len(rest) > len(honorific):
            rest = rest[len(honorific) :]
            break
    return rest if any(rest == p for p, _ in PARTICLES) else None


def honorific_after(text: str, position: int) -> bool:
    """Whether ``님``/``씨``/``께서`` follows the noun ending at ``position`` (a strong hint of a person)."""
    rest = text[position : position + 3].lstrip(" ")
    return rest.startswith((*HONORIFICS, "께서"))


def looks_like_korean_name(label: str) -> bool:
    """A three-syllable word starting with a common surname (or four with a two-syllable surname)."""
    if not HANGUL_WORD.fullmatch(label) or label in STOPWORDS:
        return False
    if len(label) == 4:
        return label[:2] in DOUBLE_SURNAMES
    return len(label) == 3 and label[0] in SURNAMES


def _emit(text: str, tokens: list[tuple[int, int]], found: list[tuple[str, int, int]]) -> None:
    while tokens and tokens[0][1] - tokens[0][0] == 0:
        tokens = tokens[1:]
    if not tokens or tokens[-1][1] <= tokens[-1][0]:
        return
    start, end = tokens[0][0], tokens[-1][1]
    label = text[start:end]
    if sum(1 for ch in label if "가" <= ch <= "힣") >= 2 and label not in STOPWORDS:
        found.append((label, start, end))


def _cuts_noun(stem: str, particle: str) -> bool:
    """Whether the particle begins inside a noun: ``결과는`` is 결과 + 는, not 결 + 과는."""
    return any((stem + particle[:k]).endswith(PARTICLE_LIKE_NOUNS) for k in range(1, len(particle)))


def _marked_or_stop(stem: str) -> str:
    if stem in HONORIFICS:
        return "honorific"
    return "stop" if not stem or stem in STOPWORDS else "marked"


def _strip_honorific(stem: str) -> str:
    for honorific in HONORIFICS:
        if stem.endswith(honorific) and len(stem) > len(honorific) + 1:
            return stem[: -len(honorific)]
    return stem


def _is_predicate(word: str) -> bool:
    if word.endswith(PREDICATE_ENDINGS):
        return True
    if len(word) >= 3 and word.endswith(MODIFIER_ENDINGS) and not word.endswith(NOUNS_LIKE_MODIFIERS):
        return True
    if len(word) >= 2 and word[-1] in PAST_MODIFIER_SYLLABLES:
        return True
    if len(word) >= 2 and word.endswith("다"):
        return _final(word[-2]) in (4, 20) or word[-2] in "하되같않르리지기히"
    return False


def _fits(stem: str, needs: str | None) -> bool:
    if needs is None:
        return True
    final = _final(stem[-1])
    if needs == "C":
        return final > 0
    if needs == "V":
        return final == 0
    return final in (0, 8)  # "VL": a vowel or ㄹ


def _final(syllable: str) -> int:
    """The index of the final consonant (batchim) of a Hangul syllable: 0 none, 4 ㄴ, 8 ㄹ, 20 ㅆ."""
    code = ord(syllable) - 0xAC00
    return code % 28 if 0 <= code < 11172 else -1


def _count_leading(word: str, characters: str) -> int:
    count = 0
    while count < len(word) and word[count] in characters:
        count += 1
    return count


def _count_trailing(word: str, characters: str) -> int:
    count = 0
    while count < len(word) and word[len(word) - 1 - count] in characters:
        count += 1
    return count
