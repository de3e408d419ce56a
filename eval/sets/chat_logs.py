"""Conversation-log retrieval set ("chat"): long two-person chats, one note per session, in the manner of LoCoMo.

Eight conversations (five English pairs, three Korean pairs), 12–20 sessions each, are written as
``conversations/<pair>/session-NN.md``. A session is 15–40 turns of ``**Name:** text`` lines that open and close
with greetings naming the other speaker ("Hey Caroline!", "안녕 지훈아", "Bye Mel, talk soon") and are padded
with small talk from one shared pool (work, weather, weekend, family, research, project). The speakers' names
and the everyday words are therefore in every note of a conversation and decide nothing.

Each speaker has eleven life facts: a research topic, a new job, a move, a pet, two trips, a class and the
hobby that replaced it, a book, a sibling and a race. A fact is stated in exactly one session; one speaker's
facts sit in distinct sessions, the job before the move and the class before its replacement. Later sessions
may allude to a fact without its key words ("How's the little one settling in?").

Questions paraphrase the fact, sharing some of its content words but never the sentence:

- ``single-session``: gold is the session stating the fact;
- ``multi-session``: two facts in two sessions (the job and the move, both trips, the class and its
  replacement, both speakers' pets...);
- ``temporal``: the order of, or the time between, two facts; gold is both sessions;
- ``unanswerable``: plausible questions about the same speakers on things no session mentions (an
  instrument, a cat, a wedding...). :func:`absent_terms` gives each one's distinguishing words; no vault file
  contains them.

The same seed always gives byte-identical files; only the standard library is used.

    python -m eval.sets.chat_logs OUT [--seed N]
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from eval.sets.base import Question, RetrievalSet, finish_set, summary
from eval.synthetic_vault import GIVEN, SURNAMES

NAME = "chat"
CONVERSATIONS = 8
KOREAN_CONVERSATIONS = 3
SESSIONS = (12, 20)
TOTAL_SESSIONS = (120, 150)
TURNS = (15, 40)
SINGLE_PER_SPEAKER = 7
MULTI_PER_CONVERSATION = 5
TEMPORAL_PER_CONVERSATION = 1
UNANSWERABLE_PER_SPEAKER = 2

# --- Korean particles --------------------------------------------------------------------------------------


def _final(word: str) -> int | None:
    """Index of the final consonant of the last Hangul syllable (0 = none); None when it is not Hangul."""
    last = word.rstrip()[-1]
    return (ord(last) - 0xAC00) % 28 if "가" <= last <= "힣" else None


def josa(word: str, after_consonant: str, after_vowel: str) -> str:
    """``word`` with the particle form that fits its last syllable (지훈이 / 민지가)."""
    return word + (after_consonant if _final(word) else after_vowel)


def josa_ro(word: str) -> str:
    """``word`` + 으로/로 (로 after a vowel or ㄹ)."""
    final = _final(word)
    return word + ("으로" if final and final != 8 else "로")


# --- people ------------------------------------------------------------------------------------------------

EN_SPEAKERS = [
    ("Caroline", "Caro"), ("Melanie", "Mel"), ("Jonathan", "Jon"), ("Samantha", "Sammy"), ("Christopher", "Chris"),
    ("Katherine", "Kate"), ("Benjamin", "Ben"), ("Alexandra", "Alex"), ("Nicholas", "Nick"), ("Jessica", "Jess"),
    ("Matthew", "Matt"), ("Rebecca", "Becca"), ("Timothy", "Tim"), ("Victoria", "Tori"), ("Elizabeth", "Liz"),
    ("Gabriel", "Gabe"),
]
EN_SURNAMES = [
    "Hayes", "Ortiz", "Brooks", "Nguyen", "Foster", "Patel", "Reyes", "Sullivan", "Kowalski", "Bennett", "Morales",
    "Fischer", "Carter", "Lindqvist", "Okafor", "Walsh",
]


@dataclass(frozen=True)
class Speaker:
    name: str  # as written before each turn: "Caroline", "지훈"
    full: str  # "Caroline Hayes", "김지훈"
    nick: str  # what friends call them: "Caro"; for Korean speakers the vocative "지훈아"
    slug: str
    korean: bool


# --- facts -------------------------------------------------------------------------------------------------

FACT_KINDS = ("research", "job", "move", "pet", "trip1", "trip2", "hobby1", "hobby2", "book", "sibling", "race")

EN_VALUES: dict[str, list] = {
    "topic": [
        "coral reef bleaching", "urban heat islands", "medieval trade routes", "sleep and memory consolidation",
        "soil microbes in vineyards", "bird migration over the Alps", "early childhood language development",
        "wind turbine noise", "the history of public libraries", "glacier retreat in Patagonia",
        "microplastics in rivers", "bee colony collapse",
    ],
    "job": [
        ("Brightwater Labs", "data analyst"), ("Northwind Health", "nurse practitioner"),
        ("Juniper Studios", "product designer"), ("Cobalt Logistics", "operations manager"),
        ("Redline Robotics", "software engineer"), ("Tidewater Bank", "compliance officer"),
        ("Orchard Media", "copywriter"), ("Silverpine Games", "level designer"),
        ("Lumen Energy", "project coordinator"), ("Greenfield Academy", "high school teacher"),
        ("Harborview Architects", "junior architect"), ("Bluebird Clinics", "physical therapist"),
    ],
    "move": [
        "Denver", "Portland", "Austin", "Chicago", "Seattle", "Boston", "Minneapolis", "Pittsburgh", "San Diego",
        "Atlanta", "Nashville", "Toronto",
    ],
    "trip": [
        "Lisbon", "Kyoto", "Reykjavik", "Barcelona", "Prague", "Mexico City", "Edinburgh", "Vienna", "Istanbul",
        "Buenos Aires", "Hanoi", "Marrakech",
    ],
    "detail": [  # (what the speaker says they did, how a question refers to it)
        ("took a boat tour at sunset", "go on a sunset boat tour"),
        ("ate our way through a night market", "eat at a night market"),
        ("rode an old cable car up the hill", "ride the old cable car"),
        ("got completely lost in the flea market", "get lost in a flea market"),
        ("spent a whole day in a giant botanical garden", "spend a day at the botanical garden"),
        ("went to a different jazz bar every night", "go to jazz bars every night"),
        ("hiked up to the castle at dawn", "hike up to a castle"),
        ("soaked in the hot springs for hours", "relax in hot springs"),
        ("did a street art walking tour", "do the street art tour"),
        ("watched a football match in the old stadium", "watch a football match"),
    ],
    "pet": [("puppy", "dog"), ("rabbit", "rabbit"), ("parrot", "parrot"), ("tortoise", "tortoise"),
            ("hedgehog", "hedgehog"), ("guinea pig", "guinea pig")],
    "pet_name": ["Biscuit", "Pepper", "Mochi", "Luna", "Ziggy", "Noodle", "Olive", "Waffles", "Bean", "Pickles",
                 "Clover", "Pumpkin"],
    "hobby1": ["pottery", "watercolor painting", "salsa dancing", "improv comedy", "woodworking", "calligraphy",
               "flower arranging", "sourdough baking"],
    "hobby2": ["rock climbing", "tennis", "swimming", "cycling", "kayaking", "volleyball", "yoga", "archery"],
    "book": [
        ("The Remains of the Day", "Kazuo Ishiguro"), ("Station Eleven", "Emily St. John Mandel"),
        ("Educated", "Tara Westover"), ("The Overstory", "Richard Powers"), ("Piranesi", "Susanna Clarke"),
        ("A Gentleman in Moscow", "Amor Towles"), ("Pachinko", "Min Jin Lee"), ("Project Hail Mary", "Andy Weir"),
        ("The Midnight Library", "Matt Haig"), ("Braiding Sweetgrass", "Robin Wall Kimmerer"),
        ("Circe", "Madeline Miller"), ("Never Let Me Go", "Kazuo Ishiguro"),
    ],
    "sibling": [("sister", "Anna"), ("brother", "Leo"), ("sister", "Nora"), ("sister", "Ruby"), ("brother", "Owen"),
                ("sister", "Ivy"), ("brother", "Felix"), ("sister", "Grace"), ("brother", "Theo"),
                ("sister", "Hazel"), ("brother", "Miles"), ("sister", "June")],
    "sibling_detail": [
        ("is starting nursing school in the fall", "is off to nursing school"),
        ("opened a tiny bakery downtown", "runs a bakery"),
        ("got into law school", "was admitted to law school"),
        ("started training to become a pilot", "is training as a pilot"),
        ("is learning to code at a bootcamp", "joined a coding bootcamp"),
        ("just bought a farmhouse upstate", "bought a farmhouse"),
    ],
    "race": [("Riverside Half Marathon", 100, 140), ("Harbor Bridge 10K", 44, 62), ("Lakeshore 5K charity run", 22, 32),
             ("Hill Country Trail 15K", 80, 110), ("Midtown Half Marathon", 105, 150), ("Autumn Leaves 10K", 45, 65)],
}

KO_VALUES: dict[str, list] = {
    "topic": [
        "도시 열섬 현상", "해양 미세플라스틱", "조선 후기 시장 경제", "수면과 기억력의 관계", "청소년 SNS 사용 습관",
        "꿀벌 군집 붕괴", "전통 한옥의 단열 구조", "산불 확산 예측 모델", "노인 1인 가구의 식생활", "갯벌 생태계 복원",
    ],
    "job": [
        ("한빛소프트", "백엔드 개발자"), ("누리바이오", "품질 관리 담당자"), ("가온물류", "데이터 분석가"),
        ("새별전자", "UX 디자이너"), ("푸른에너지", "마케터"), ("다산출판사", "편집자"), ("하늘항공", "회계사"),
        ("온누리병원", "간호사"), ("세종초등학교", "초등학교 교사"), ("청솔건축", "건축 설계사"),
    ],
    "move": ["부산", "대전", "광주", "대구", "전주", "강릉", "춘천", "수원", "제주", "포항"],
    "trip": ["교토", "오사카", "타이베이", "방콕", "다낭", "파리", "프라하", "바르셀로나", "런던", "하노이", "삿포로"],
    "detail": [
        ("노을 질 때 배 타고 투어했어", "노을 보면서 배 투어한"),
        ("야시장에서 길거리 음식 잔뜩 먹었어", "야시장에서 길거리 음식 먹은"),
        ("케이블카 타고 전망대까지 올라갔어", "케이블카 타고 전망대 올라간"),
        ("벼룩시장에서 완전 길을 잃었어", "벼룩시장에서 길 잃은"),
        ("엄청 큰 식물원에서 하루 종일 있었어", "식물원에서 하루 보낸"),
        ("매일 밤 재즈 바에 갔어", "재즈 바 다닌"),
        ("새벽에 성까지 걸어서 올라갔어", "성까지 걸어 올라간"),
        ("온천에서 몇 시간씩 쉬었어", "온천에서 쉰"),
    ],
    "pet": [("강아지", "강아지"), ("토끼", "토끼"), ("앵무새", "앵무새"), ("거북이", "거북이"),
            ("고슴도치", "고슴도치")],
    "pet_name": ["콩이", "보리", "두부", "감자", "모카", "호두", "구름", "쿠키", "떡이", "밤톨"],
    "hobby1": ["도예", "수채화", "살사 댄스", "목공", "캘리그라피", "꽃꽂이", "제빵", "뜨개질"],
    "hobby2": ["클라이밍", "테니스", "수영", "배드민턴", "자전거", "카약", "배구", "양궁"],
    "book": [
        ("아몬드", "손원평"), ("불편한 편의점", "김호연"), ("달러구트 꿈 백화점", "이미예"), ("파친코", "이민진"),
        ("나미야 잡화점의 기적", "히가시노 게이고"), ("미드나잇 라이브러리", "매트 헤이그"),
        ("82년생 김지영", "조남주"), ("어린 왕자", "생텍쥐페리"), ("데미안", "헤르만 헤세"),
    ],
    "sibling": [("여동생", "지은"), ("남동생", "민수"), ("여동생", "현아"), ("남동생", "준서"), ("여동생", "예진"),
                ("남동생", "태오"), ("여동생", "서아"), ("남동생", "도하"), ("남동생", "윤호"), ("여동생", "가람")],
    "sibling_detail": [
        ("이번에 간호대에 입학했어", "간호대 들어간"),
        ("동네에 작은 빵집을 열었어", "빵집 연"),
        ("로스쿨에 붙었어", "로스쿨 붙은"),
        ("조종사 훈련을 받기 시작했어", "조종사 훈련 받는"),
        ("코딩 부트캠프에 다니기 시작했어", "코딩 부트캠프 다니는"),
        ("시골에 농가 주택을 샀어", "농가 주택 산"),
    ],
    "race": [("춘천 마라톤 10킬로", 45, 65), ("서울 하프 마라톤", 100, 145), ("한강 나이트 런 10킬로", 46, 66),
             ("부산 바다 하프 마라톤", 105, 150), ("제주 트레일 런 15킬로", 85, 115),
             ("대전 5킬로 자선 달리기", 23, 33)],
}


@dataclass
class Fact:
    kind: str
    owner: Speaker
    values: dict[str, str]
    session: int = -1


@dataclass
class Conversation:
    slug: str
    a: Speaker
    b: Speaker
    korean: bool
    dates: list[date]
    facts: list[Fact] = field(default_factory=list)

    def path(self, session: int) -> str:
        return f"conversations/{self.slug}/session-{session + 1:02d}.md"

    def fact(self, owner: Speaker, kind: str) -> Fact:
        return next(f for f in self.facts if f.owner == owner and f.kind == kind)

    def partner(self, speaker: Speaker) -> Speaker:
        return self.b if speaker == self.a else self.a


def _race_time(low: int, high: int, rng: random.Random, korean: bool) -> str:
    seconds = rng.randint(low * 60, high * 60)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if korean:
        return f"{hours}시간 {minutes}분" if hours else f"{minutes}분 {secs}초"
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _facts(a: Speaker, b: Speaker, korean: bool, rng: random.Random) -> list[Fact]:
    """Both speakers' facts, with values drawn without replacement so the two never share one."""
    pools = KO_VALUES if korean else EN_VALUES
    drawn = {key: rng.sample(pool, 4 if key in ("trip", "detail") else 2) for key, pool in pools.items()}
    facts: list[Fact] = []
    for index, owner in enumerate((a, b)):

        def pick(key: str, offset: int = 0, index: int = index) -> object:
            return drawn[key][index * (2 if key in ("trip", "detail") else 1) + offset]

        company, role = pick("job")
        species, species_q = pick("pet")
        title, author = pick("book")
        relation, sibling = pick("sibling")
        sibling_detail, sibling_detail_q = pick("sibling_detail")
        race, low, high = pick("race")
        h1, h2 = pick("hobby1"), pick("hobby2")
        values = {
            "research": {"topic": pick("topic")},
            "job": {"company": company, "role": role},
            "move": {"city": pick("move")},
            "pet": {"species": species, "species_q": species_q, "pet": pick("pet_name")},
            "hobby1": {"h1": h1},
            "hobby2": {"h1": h1, "h2": h2},
            "book": {"title": title, "author": author},
            "sibling": {"rel": relation, "sib": sibling, "sdetail": sibling_detail, "sdetail_q": sibling_detail_q},
            "race": {"race": race, "time": _race_time(low, high, rng, korean)},
        }
        for trip in (0, 1):
            detail, detail_q = pick("detail", trip)
            values[f"trip{trip + 1}"] = {"city": pick("trip", trip), "detail": detail, "detail_q": detail_q}
        facts.extend(Fact(kind, owner, values[kind]) for kind in FACT_KINDS)
    return facts


def _place(conversation: Conversation, sessions: int, rng: random.Random) -> None:
    """Each speaker's facts go to distinct sessions; job before move, class before its replacement."""
    for owner in (conversation.a, conversation.b):
        mine = [fact for fact in conversation.facts if fact.owner == owner]
        slots = sorted(rng.sample(range(sessions), len(mine)))
        rng.shuffle(slots)
        for fact, slot in zip(mine, slots, strict=True):
            fact.session = slot
        for first, then in (("job", "move"), ("hobby1", "hobby2"), ("trip1", "trip2")):
            one, two = conversation.fact(owner, first), conversation.fact(owner, then)
            if one.session > two.session:
                one.session, two.session = two.session, one.session


# --- dialogue templates ------------------------------------------------------------------------------------
# {o}/{oc}: the fact owner's name / what the partner calls them; {p}/{pc}: the partner's. Korean templates also
# get {o_i} (지훈이/민지가), {o_n} (지훈은/민지는) and particle forms of the values (…_ro, …_ya, …_ul, …_rang).

STATEMENTS = {
    "en": {
        "research": ["I finally settled on my thesis topic: I'm researching {topic}.",
                     "My advisor approved the proposal, so my research is officially about {topic} now."],
        "job": ["Big news: I accepted an offer at {company}! I'm going to be a {role} there.",
                "I handed in my notice today. I start at {company} next month as a {role}."],
        "move": ["The movers came on Saturday. I officially live in {city} now, close to the new office.",
                 "So I moved to {city} last week because of the new job. Boxes everywhere."],
        "pet": ["I adopted a {species} from the shelter! {pet} is already running the house.",
                "Meet the newest family member: a little {species} called {pet}."],
        "trip": ["Just got back from {city}! We {detail}.",
                 "{city} was amazing. The best part was that we {detail}."],
        "hobby1": ["I signed up for a {h1} class on Tuesday evenings.",
                   "Guess what, I started {h1} lessons at the community center."],
        "hobby2": ["Honestly, I quit the class I told you about. I'm doing {h2} now and I love it.",
                   "Update: I stopped going to those lessons. It's all {h2} now, three times a week."],
        "book": ["I just finished {title} by {author}. Couldn't put it down.",
                 "I'm reading {title} right now. {author} writes so well."],
        "sibling": ["My {rel} {sib} {sdetail}, so the whole family is excited.",
                    "Family news: {sib}, my little {rel}, {sdetail}!"],
        "race": ["I ran the {race} on Sunday! Finished in {time}.",
                 "I crossed the finish line of the {race} in {time}. My legs are dead."],
    },
    "ko": {
        "research": ["드디어 논문 주제 정했어. {topic}에 대해 연구하려고.",
                     "지도교수님이 계획서 통과시켜 주셨어. 이제 공식적으로 {topic} 연구해."],
        "job": ["나 {company}에 {role_ro} 합격했어! 다음 달부터 출근이야.",
                "오늘 사표 냈어. 다음 달부터 {company}에서 {role_ro} 일해."],
        "move": ["지난주에 {city_ro} 이사했어. 새 회사랑 가까워서.",
                 "토요일에 이삿짐 다 옮겼어. 이제 완전 {city} 사람이야 ㅋㅋ"],
        "pet": ["보호소에서 {species} 입양했어! 이름은 {pet_ya}.",
                "우리 집에 새 식구 왔어. {species}인데 이름은 {pet_ya}."],
        "trip": ["{city} 다녀왔어! {detail}.", "이번에 {city} 갔는데 진짜 좋았어. {detail}."],
        "hobby1": ["나 화요일 저녁마다 {h1} 수업 듣기로 했어.", "요즘 문화센터에서 {h1} 배우기 시작했어."],
        "hobby2": ["전에 말한 수업은 그만뒀어. 요즘은 {h2} 해, 완전 재밌어.",
                   "그 수업 결국 관뒀어 ㅋㅋ 요즘은 일주일에 세 번 {h2} 해."],
        "book": ["{title} 다 읽었어. {author} 책인데 손을 못 놓겠더라.",
                 "요즘 {title} 읽고 있어. {author} 글 진짜 잘 써."],
        "sibling": ["우리 {rel} {sib_i} {sdetail}. 온 가족이 난리야.", "집안 소식! {rel} {sib_i} {sdetail}."],
        "race": ["일요일에 {race} 뛰었어! 기록은 {time}.", "{race} 완주했어. 기록 {time}, 다리가 후들거려."],
    },
}

REACTIONS = {
    "en": {
        "research": ["Wow {oc}, that sounds fascinating!", "That's so cool, {oc}. You've wanted that for ages."],
        "job": ["Congrats {oc}! That's huge.", "Congrats {oc}!! They're lucky to have you."],
        "move": ["Wow {oc}, a whole new city! How does it feel?", "Welcome to your new life, {oc}!"],
        "pet": ["Aww {oc}, I need pictures of {pet} immediately!", "No way! {pet} is such a cute name, {oc}."],
        "trip": ["Wow {oc}, so jealous!", "That sounds like a dream trip, {oc}."],
        "hobby1": ["Ooh fun, {oc}! Show me what you make.", "That's great {oc}, you needed something just for you."],
        "hobby2": ["Ha, good for you {oc}! Whatever makes you happy.", "Wow {oc}, that's a big switch!"],
        "book": ["Ooh, I've heard great things about it, {oc}.", "Adding it to my list, thanks {oc}!"],
        "sibling": ["That's amazing, {oc}! Tell {sib} congrats from me.",
                    "Wow, good for {sib}! You must be proud, {oc}."],
        "race": ["Congrats {oc}! That's a great time.", "Wow {oc}, that's great! I could never."],
    },
    "ko": {
        "research": ["와 대박 {oc}, 재밌겠다!", "오 {oc} 드디어! 멋있다."],
        "job": ["축하해 {oc}!! 진짜 잘됐다.", "와 대박, 축하해 {oc}!"],
        "move": ["와 {oc} 완전 새 출발이네!", "헐 벌써? 적응 잘 하길 바랄게 {oc}."],
        "pet": ["꺅 {oc} {pet} 사진 빨리 보내줘!", "헐 너무 귀엽다 {oc}, 이름도 찰떡이야."],
        "trip": ["와 부럽다 {oc}!", "헐 대박, 완전 꿈같은 여행이다 {oc}."],
        "hobby1": ["오 재밌겠다 {oc}! 완성하면 보여줘.", "좋다 {oc}, 너 취미 하나 필요했잖아."],
        "hobby2": ["ㅋㅋㅋ {oc} 잘했어, 재밌는 게 최고지.", "와 {oc} 완전 다른 거네!"],
        "book": ["오 그거 좋다고 들었어 {oc}.", "나도 읽어볼래, 고마워 {oc}!"],
        "sibling": ["와 대박 {oc}! {sib}한테 축하한다고 전해줘.", "헐 진짜? {oc} 뿌듯하겠다."],
        "race": ["축하해 {oc}! 기록 엄청 좋은데?", "와 대박 {oc}, 나는 절대 못 해."],
    },
}

FOLLOW_UPS = {
    "en": ["Thanks {pc}! I still can't quite believe it.", "Haha thanks {pc}.", "I know, right? More next time.",
           "Thanks {pc}, you're the best."],
    "ko": ["고마워 {pc}! 아직도 실감이 안 나.", "ㅋㅋ 고마워 {pc}.", "그치? 다음에 더 얘기해줄게.",
           "고마워 {p}, 역시 너밖에 없어."],
}

LOOSE_REFERENCES = {  # (partner asks, owner answers): later allusions without the fact's key words
    "en": {
        "research": [("How's the thesis going, {oc}?", "Slowly! Still buried in papers.")],
        "job": [("How's the new place treating you, {oc}?", "Good so far, the people are really nice.")],
        "move": [("Settled into the new apartment yet?", "Almost, there are still a few boxes left.")],
        "pet": [("How's the little one settling in, {oc}?", "So well. Still chews everything though.")],
        "trip": [("Still dreaming about that trip?", "Every single day, haha.")],
        "hobby1": [("Still going to those evening lessons, {oc}?", "Yep, slowly getting less terrible.")],
        "hobby2": [("Are your arms still sore from the new thing?", "Always, haha. Worth it.")],
        "book": [("Did you start another book after the last one?", "Not yet, nothing has grabbed me.")],
        "sibling": [("How's your {rel} doing these days?", "Busy but happy!")],
        "race": [("Have your legs recovered from the race, {oc}?", "Finally, haha. Maybe I'll sign up for another.")],
    },
    "ko": {
        "research": [("논문은 잘 돼가 {oc}?", "천천히... 아직 자료 읽는 중이야.")],
        "job": [("새 직장은 어때 {oc}?", "아직까진 좋아. 사람들이 다 친절해.")],
        "move": [("새 집 정리는 다 했어?", "거의! 박스 몇 개만 남았어.")],
        "pet": [("우리 아기는 잘 지내 {oc}?", "완전 잘 지내. 아직 다 물어뜯긴 하지만 ㅋㅋ")],
        "trip": [("아직도 그 여행 생각나?", "매일 생각나 ㅠㅠ")],
        "hobby1": [("저녁 수업은 아직 다녀 {oc}?", "응, 조금씩 늘고 있어.")],
        "hobby2": [("요즘 하는 운동 때문에 아직 근육통 있어?", "맨날 ㅋㅋ 그래도 재밌어.")],
        "book": [("지난번 책 다음엔 뭐 읽어?", "아직 딱 꽂히는 게 없어.")],
        "sibling": [("{rel}은 요즘 잘 지내?", "바쁘지만 행복해 보여!")],
        "race": [("다리는 이제 괜찮아 {oc}?", "이제 좀 괜찮아 ㅋㅋ 다음 대회도 나가볼까 봐.")],
    },
}

GREETINGS = {  # (opener addressing the other, reply addressing the opener); {yc}/{y}: the addressee
    "en": [("Hey {yc}!", "Hey {xc}! Good to hear from you."),
           ("Hi {yc}! Long time no talk.", "Hi {xc}! I know, right?"),
           ("Hey {yc}, how's it going?", "Hey hey {xc}! Pretty good, you?"), ("Good morning {yc}!", "Morning {xc}!"),
           ("{y}! It's been a while.", "{xc}! I was just thinking about you.")],
    "ko": [("안녕 {yc}!", "안녕 {xc}! 반가워."), ("{yc}, 잘 지냈어?", "오 {x}! 나야 잘 지냈지."),
           ("좋은 아침 {yc}!", "좋은 아침 {xc}!"), ("{y}! 오랜만이다.", "{xc}! 안 그래도 연락하려 했는데.")],
}
CLOSINGS = {
    "en": [("Bye {yc}, talk soon!", "Bye {xc}!"), ("Okay {yc}, I have to run. Talk later!", "Talk soon {xc}!"),
           ("Take care {yc}!", "Thanks {xc}, you too!"), ("Night {yc}!", "Good night {xc}, sleep well.")],
    "ko": [("잘 자 {yc}, 다음에 또 얘기하자!", "응 {xc} 잘 자!"),
           ("나 이제 가봐야 돼. 또 연락할게 {yc}!", "응 {xc} 잘 가!"),
           ("오늘 얘기 재밌었어 {yc}.", "고마워 {x}, 나도!"), ("{yc} 푹 쉬어!", "너도 {xc}, 안녕!")],
}

FILLER = {  # (one speaker, the other); {yc}: the second speaker, {xc}: the first. Shared by every session.
    "en": [
        ("How was your week, {yc}?", "Busy! Work has been nonstop, the project deadline moved up again."),
        ("Did you do anything fun this weekend?", "Not really, it rained the whole weekend so I stayed in."),
        ("The weather here has been so weird lately.", "Same here, sunny in the morning and freezing by evening."),
        ("How's the family?", "Everyone's good. My mom keeps asking when I'm visiting."),
        ("Work is dragging a bit this week.", "Hang in there {xc}, Friday is close."),
        ("I've been trying to cook more at home.", "Nice! Mostly pasta, I bet."),
        ("How's the research side of things?", "Slow week, mostly meetings and emails."),
        ("Our team had a long meeting about the new project today.", "Ugh, those meetings never end, do they?"),
        ("Are you sleeping better these days?", "A bit. I stopped checking my phone in bed."),
        ("I finally cleaned my whole apartment.", "Wow {xc}, that's great. I need to do that too."),
        ("Did you watch the game last night?", "I fell asleep at halftime, haha."),
        ("I'm so tired today.", "Same, {xc}. Coffee isn't even helping."),
        ("Any plans for the holidays?", "Probably just family stuff, nothing big."),
        ("My neighbor's renovation is so loud.", "Oh no, that sounds awful."),
        ("I've been walking a lot more.", "Good for you {xc}!"),
        ("Work sent us to a training day.", "Was it useful at all?"),
        ("I tried that new ramen place near the station.", "Was it worth the line?"),
        ("My project at work finally shipped.", "Congrats {xc}! That's a relief."),
        ("How's your weekend looking, {yc}?", "Lazy, hopefully. Maybe a long walk."),
        ("I got caught in the rain on the way home.", "Classic. This weather is unpredictable."),
        ("I had a long call with my parents.", "How are they doing?"),
        ("I'm thinking of redoing my living room.", "Ooh, send me ideas!"),
        ("I can't believe it's already {month}.", "Right? This year is flying by."),
        ("Did you see the news about the transit strike?", "Yeah, my commute was a mess."),
        ("I've been reading a lot of papers for work.", "Anything interesting?"),
        ("Family dinner on Sunday was chaos.", "Haha, the best kind of chaos."),
        ("My research group wants another draft by Friday.", "Oof, good luck {xc}."),
        ("I finally took a day off.", "You deserved it, {xc}."),
        ("How's the new week treating you?", "Too many emails, but okay."),
        ("My boss scheduled a meeting for 8 a.m.", "That should be illegal, {xc}."),
    ],
    "ko": [
        ("이번 주 어땠어 {yc}?", "정신없었어. 회사 프로젝트 마감이 또 당겨졌어."),
        ("주말에 뭐 했어?", "비 와서 그냥 집에 있었어."),
        ("요즘 날씨 진짜 이상하다.", "그치, 아침엔 덥고 저녁엔 춥고."),
        ("가족들은 다 잘 지내?", "응 다들 잘 지내. 엄마가 언제 오냐고 계속 물어봐."),
        ("오늘 회사에서 회의만 네 개 했어.", "헐 진짜? 고생했다 {xc}."),
        ("연구는 잘 돼가?", "이번 주는 메일이랑 회의만 하다 끝났어."),
        ("요즘 잠은 잘 자?", "조금 나아졌어. 침대에서 폰 안 보려고."),
        ("드디어 방 청소 다 했어.", "와 대박, 나도 해야 되는데."),
        ("어제 경기 봤어?", "전반 끝나고 잠들었어 ㅋㅋ"),
        ("오늘 너무 피곤하다.", "나도... 커피도 안 통해."),
        ("연휴에 뭐 할 거야?", "그냥 가족이랑 밥 먹을 듯."),
        ("윗집 공사 소리 때문에 미치겠어.", "헐 힘들겠다."),
        ("요즘 많이 걷고 있어.", "오 좋다 {xc}!"),
        ("역 근처 새로 생긴 라멘집 가봤어.", "줄 설 만해?"),
        ("회사 프로젝트 드디어 끝났어.", "축하해 {xc}! 속 시원하겠다."),
        ("퇴근길에 비 쫄딱 맞았어.", "아 요즘 날씨 진짜 예측 불가야."),
        ("부모님이랑 통화 오래 했어.", "다들 건강하시지?"),
        ("거실 인테리어 바꿔볼까 생각 중이야.", "오 사진 보내줘!"),
        ("벌써 {month}월이라니 믿기지 않아.", "그니까, 올해 진짜 빨리 간다."),
        ("요즘 일 때문에 논문을 엄청 읽어.", "재밌는 거 있어?"),
        ("일요일 가족 모임 완전 난리였어.", "ㅋㅋㅋ 그게 가족이지."),
        ("연구실에서 금요일까지 초안 또 내래.", "헐... 힘내 {xc}."),
        ("드디어 연차 하루 썼어.", "잘했어, 쉴 자격 있어."),
        ("이번 주 시작은 어때 {yc}?", "메일이 너무 많아 ㅠㅠ 그래도 괜찮아."),
        ("지하철 파업 때문에 출근 완전 망했어.", "아 나도 뉴스 봤어."),
        ("오늘 점심 뭐 먹었어?", "김치찌개! 회사 앞에 잘하는 데 있어."),
        ("팀장님이 아침 8시에 회의 잡았어.", "헐 그건 너무했다 {xc}."),
        ("주말에 본가 다녀왔어.", "오 좋았겠다. 맛있는 거 많이 먹었어?"),
    ],
}
INTERJECTIONS = {
    "en": ["Haha, true.", "lol right?", "Totally.", "Oh nice!", "Wow {yc}, that's great.", "Ha, classic {y}."],
    "ko": ["와 대박", "헐 진짜?", "ㅋㅋㅋ 맞아", "오 좋다", "그니까 {yc}", "ㅋㅋㅋㅋ"],
}

QUESTIONS = {
    "en": {
        "research": ["What is {o} researching?", "What topic did {o} pick for the thesis?",
                     "What's {o}'s research about?"],
        "job": ["Where did {o} get a new job?", "Which company hired {o}, and for what position?",
                "What's {o}'s new job?"],
        "move": ["Which city did {o} move to?", "Where does {o} live now after the move?"],
        "pet": ["What's the name of the {species_q} {o} adopted?",
                "What did {o} call the new {species_q} from the shelter?"],
        "trip": ["Where did {o} {detail_q}?", "In which city did {o} {detail_q}?"],
        "hobby1": ["What class did {o} sign up for?", "Which evening lessons did {o} start taking?"],
        "hobby2": ["What does {o} do for fun now, after quitting the lessons?", "What activity did {o} switch to?"],
        "book": ["What book was {o} reading?", "Which {author} book did {o} finish?"],
        "sibling": ["What's the name of {o}'s {rel}?", "What's the name of {o}'s sibling who {sdetail_q}?"],
        "race": ["What was {o}'s finishing time in the {race}?", "How fast did {o} run the {race}?"],
        "job+move": ["Where did {o} move after changing jobs?",
                     "Which city did {o} relocate to for the job at {company}?"],
        "trip1+trip2": ["Which cities did {o} visit on trips?", "Where has {o} traveled recently?"],
        "hobby1+hobby2": ["What did {o} give up before taking up {h2}?",
                          "Which class did {o} quit, and what replaced it?"],
        "research+job": ["What does {o} research, and which company hired {o}?"],
        "pets": ["What are the names of the pets {a} and {b} adopted?"],
        "books": ["Which books did {a} and {b} each read?"],
        "moves": ["Which cities did {a} and {b} move to?"],
        "trip-order": ["Did {o} go to {c1} or to {c2} first?"],
        "hobby-span": ["How long did {o} stick with {h1} before switching to {h2}?"],
        "pet-move": ["Did {o} adopt {pet} before or after moving to {city}?"],
    },
    "ko": {
        "research": ["{o_i} 연구하는 주제가 뭐였지?", "{o_n} 논문 주제로 뭘 골랐어?"],
        "job": ["{o_i} 새로 들어간 회사가 어디야?", "{o_i} 이직한 회사랑 직무가 뭐였지?"],
        "move": ["{o_i} 이사 간 도시가 어디였지?", "{o_n} 요즘 어느 도시에 살아?"],
        "pet": ["{o_i} 입양한 {species_q} 이름이 뭐였지?", "{o}네 {species_q} 이름 뭐였더라?"],
        "trip": ["{o_i} {detail_q} 도시가 어디야?", "{o_i} 여행 가서 {detail_q} 곳이 어디였지?"],
        "hobby1": ["{o_i} 처음 등록한 취미 수업이 뭐였지?", "{o_i} 저녁마다 배우던 게 뭐였어?"],
        "hobby2": ["{o_i} 수업 그만두고 요즘 하는 운동이 뭐야?", "{o_n} 요즘 취미로 뭐 해?"],
        "book": ["{o_i} 읽은 책이 뭐였지?", "{o_i} 읽은 {author} 책 제목이 뭐야?"],
        "sibling": ["{o}의 {rel} 이름이 뭐야?", "{o}의 형제 중에 {sdetail_q} 사람 이름은?"],
        "race": ["{o}의 {race} 기록이 어떻게 돼?", "{o_i} {race} 몇 분에 들어왔어?"],
        "job+move": ["{o_i} 이직하고 나서 이사 간 도시가 어디야?", "{o_i} {company} 다니려고 옮겨 간 도시는?"],
        "trip1+trip2": ["{o_i} 여행 갔던 도시들이 어디어디야?", "{o_i} 다녀온 여행지 전부 알려줘."],
        "hobby1+hobby2": ["{o_i} {h2} 시작하기 전에 그만둔 수업이 뭐야?",
                          "{o_i} 그만둔 취미 수업이랑 새로 시작한 운동은?"],
        "research+job": ["{o_i} 연구한 주제랑 취직한 회사가 각각 뭐야?"],
        "pets": ["{a_rang} {b_i} 입양한 동물 이름이 각각 뭐야?"],
        "books": ["{a_rang} {b_i} 각각 읽은 책이 뭐야?"],
        "moves": ["{a_rang} {b_i} 이사 간 도시가 각각 어디야?"],
        "trip-order": ["{o_i} {c1_rang} {c2} 중에 어디를 먼저 갔어?"],
        "hobby-span": ["{o_i} {h1} 얼마나 하다가 {h2_ro} 바꿨어?"],
        "pet-move": ["{o_i} {pet_ul} 입양한 게 {city_ro} 이사하기 전이야, 후야?"],
    },
}

UNANSWERABLE = {  # (question, the words that make it unanswerable: no vault file contains any of them)
    "en": [
        ("What instrument does {o} play?", ("instrument",)),
        ("What's the name of {o}'s cat?", ("cat",)),
        ("When is {o}'s wedding?", ("wedding",)),
        ("What tattoo did {o} get?", ("tattoo",)),
        ("What kind of motorcycle does {o} ride?", ("motorcycle",)),
        ("How much did {o} win in the lottery?", ("lottery",)),
        ("What is {o}'s podcast about?", ("podcast",)),
        ("Which chess tournament did {o} play in?", ("chess", "tournament")),
        ("Where does {o} usually go skiing?", ("skiing", "ski")),
        ("What is {o} allergic to?", ("allergic", "allergy")),
        ("What did {o} name the goldfish?", ("goldfish",)),
        ("Where did {o} go sailing?", ("sailing",)),
        ("What surgery did {o} have?", ("surgery",)),
        ("Which volcano did {o} climb?", ("volcano",)),
        ("What did {o} think of the Olympics?", ("olympics",)),
        ("Where did {o} watch the solar eclipse?", ("eclipse",)),
        ("What does {o}'s grandmother do for a living?", ("grandmother", "grandma")),
        ("Which piano piece is {o} learning?", ("piano",)),
        ("What is {o}'s favorite sushi place?", ("sushi",)),
    ],
    "ko": [
        ("{o_n} 무슨 악기 연주해?", ("악기", "연주")),
        ("{o_i} 키우는 고양이 이름이 뭐야?", ("고양이",)),
        ("{o} 결혼식은 언제야?", ("결혼식",)),
        ("{o_i} 새로 한 타투는 어떤 거야?", ("타투", "문신")),
        ("{o_i} 타는 오토바이 기종이 뭐야?", ("오토바이",)),
        ("{o_i} 복권 당첨된 금액이 얼마야?", ("복권",)),
        ("{o_i} 하는 팟캐스트 주제가 뭐야?", ("팟캐스트",)),
        ("{o_i} 나간 바둑 대회가 어디였어?", ("바둑",)),
        ("{o_i} 자주 가는 스키장이 어디야?", ("스키",)),
        ("{o_n} 무슨 알레르기 있어?", ("알레르기",)),
        ("{o_i} 키우는 금붕어 이름은?", ("금붕어",)),
        ("{o_i} 받은 수술이 뭐였지?", ("수술",)),
        ("{o_i} 올라간 화산 이름이 뭐야?", ("화산",)),
        ("{o_n} 올림픽 보고 뭐라고 했어?", ("올림픽",)),
        ("{o}의 할머니는 무슨 일 하셔?", ("할머니",)),
        ("{o_i} 좋아하는 초밥집이 어디야?", ("초밥",)),
    ],
}

EN_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December"]


# --- building ----------------------------------------------------------------------------------------------


def _speakers(rng: random.Random) -> list[tuple[Speaker, Speaker, bool]]:
    """The eight pairs, English and Korean shuffled together."""
    english = rng.sample(EN_SPEAKERS, 2 * (CONVERSATIONS - KOREAN_CONVERSATIONS))
    surnames = rng.sample(EN_SURNAMES, len(english))
    people = [Speaker(first, f"{first} {last}", nick, first.lower(), False)
              for (first, nick), last in zip(english, surnames, strict=True)]
    korean_given = rng.sample(GIVEN, 2 * KOREAN_CONVERSATIONS)
    korean_family = rng.sample(SURNAMES, len(korean_given))
    korean = [Speaker(ko, family + ko, josa(ko, "아", "야"), en.lower(), True)
              for (ko, en), (family, _) in zip(korean_given, korean_family, strict=True)]
    pairs = [(people[i], people[i + 1], False) for i in range(0, len(people), 2)]
    pairs += [(korean[i], korean[i + 1], True) for i in range(0, len(korean), 2)]
    rng.shuffle(pairs)
    return pairs


def _session_counts(rng: random.Random) -> list[int]:
    while True:
        counts = [rng.randint(*SESSIONS) for _ in range(CONVERSATIONS)]
        if TOTAL_SESSIONS[0] <= sum(counts) <= TOTAL_SESSIONS[1]:
            return counts


def _conversations(rng: random.Random) -> list[Conversation]:
    conversations = []
    start = date(2023, 1, 9)
    for (a, b, korean), sessions in zip(_speakers(rng), _session_counts(rng), strict=True):
        day = start + timedelta(days=rng.randint(0, 120))
        dates = []
        for _ in range(sessions):
            dates.append(day)
            day += timedelta(days=rng.randint(3, 24))
        conversation = Conversation(f"{a.slug}-{b.slug}", a, b, korean, dates)
        conversation.facts = _facts(a, b, korean, rng)
        _place(conversation, sessions, rng)
        conversations.append(conversation)
    return conversations


def _call(speaker: Speaker, rng: random.Random) -> str:
    """What the other speaker calls ``speaker`` in one line: the name or, now and then, the nickname (Korean
    speakers are always called with the vocative, 지훈아)."""
    if speaker.korean:
        return speaker.nick
    return speaker.nick if rng.random() < 0.35 else speaker.name


def _fields(values: dict[str, str], owner: Speaker, partner: Speaker, rng: random.Random) -> dict[str, str]:
    """Template fields for a line about ``owner``'s fact, with Korean particle forms."""
    out = dict(values)
    out.update(o=owner.name, oc=_call(owner, rng), p=partner.name, pc=_call(partner, rng))
    out.update(o_i=josa(owner.name, "이", "가"), o_n=josa(owner.name, "은", "는"))
    for key in ("city", "role", "h2"):
        if key in values:
            out[f"{key}_ro"] = josa_ro(values[key])
    if "pet" in values:
        out["pet_ya"] = josa(values["pet"], "이야", "야")
        out["pet_ul"] = josa(values["pet"], "을", "를")
    if "sib" in values:
        out["sib_i"] = josa(values["sib"], "이", "가")
    return out


def _line(template: str, fields: dict[str, str]) -> str:
    return template.format(**fields)


def _fact_block(fact: Fact, partner: Speaker, lang: str, rng: random.Random) -> list[tuple[Speaker, str]]:
    kind = fact.kind.rstrip("12") if fact.kind.startswith("trip") else fact.kind
    owner = fact.owner
    block = [(owner, _line(rng.choice(STATEMENTS[lang][kind]), _fields(fact.values, owner, partner, rng))),
             (partner, _line(rng.choice(REACTIONS[lang][kind]), _fields(fact.values, owner, partner, rng)))]
    if rng.random() < 0.5:
        block.append((owner, _line(rng.choice(FOLLOW_UPS[lang]), _fields(fact.values, owner, partner, rng))))
    return block


def _session_text(conversation: Conversation, index: int, rng: random.Random) -> str:
    lang = "ko" if conversation.korean else "en"
    a, b = conversation.a, conversation.b
    day = conversation.dates[index]
    month = str(day.month) if conversation.korean else EN_MONTHS[day.month - 1]

    def pair(templates: list[tuple[str, str]], x: Speaker) -> list[tuple[Speaker, str]]:
        y = conversation.partner(x)
        first, second = rng.choice(templates)
        fields = {"x": x.name, "y": y.name, "xc": _call(x, rng), "yc": _call(y, rng), "month": month}
        return [(x, first.format(**fields)), (y, second.format(**fields))]

    opening = pair(GREETINGS[lang], rng.choice((a, b)))
    closing = pair(CLOSINGS[lang], rng.choice((a, b)))
    blocks: list[list[tuple[Speaker, str]]] = []
    for fact in conversation.facts:
        if fact.session == index:
            blocks.append(_fact_block(fact, conversation.partner(fact.owner), lang, rng))
    earlier = [f for f in conversation.facts if f.session < index]
    hobby_switch = {f.owner: f.session for f in conversation.facts if f.kind == "hobby2"}
    earlier = [f for f in earlier if f.kind != "hobby1" or hobby_switch[f.owner] > index]
    for fact in rng.sample(earlier, min(len(earlier), rng.randint(0, 2))):
        kind = fact.kind.rstrip("12") if fact.kind.startswith("trip") else fact.kind
        partner = conversation.partner(fact.owner)
        ask, answer = rng.choice(LOOSE_REFERENCES[lang][kind])
        fields = _fields(fact.values, fact.owner, partner, rng)
        blocks.append([(partner, ask.format(**fields)), (fact.owner, answer.format(**fields))])
    wanted = rng.randint(TURNS[0], TURNS[1] - 2) - len(opening) - len(closing)  # a block may overshoot by 2
    fillers = rng.sample(FILLER[lang], len(FILLER[lang]))
    while sum(len(block) for block in blocks) < wanted and fillers:
        block = pair([fillers.pop()], rng.choice((a, b)))
        if rng.random() < 0.25:  # the first speaker answers the answer: "Haha, true." / "ㅋㅋㅋ 맞아"
            first, other = block[0][0], block[1][0]
            block.append((first, rng.choice(INTERJECTIONS[lang]).format(y=other.name, yc=_call(other, rng))))
        blocks.append(block)
    rng.shuffle(blocks)
    turns = opening + [turn for block in blocks for turn in block] + closing
    if conversation.korean:
        title = f"{josa(a.name, '과', '와')} {b.name}의 대화 — {index + 1}회차"
        dated = f"날짜: {day.year}년 {day.month}월 {day.day}일"
    else:
        title = f"{a.name} and {b.name} — session {index + 1}"
        dated = f"Date: {day.day} {EN_MONTHS[day.month - 1]} {day.year}"
    tags = "[conversation, 대화]" if conversation.korean else "[conversation, chat]"
    head = (f"---\ntitle: {title}\ndate: {day.isoformat()}\nparticipants: [{a.name}, {b.name}]\n"
            f"aliases: [{a.full} & {b.full} {index + 1}]\ntags: {tags}\n---\n\n# {title}\n\n{dated}\n\n")
    return head + "\n\n".join(f"**{speaker.name}:** {text}" for speaker, text in turns) + "\n"


def _questions(conversations: list[Conversation], rng: random.Random) -> tuple[list[Question], dict[str, tuple]]:
    questions: list[Question] = []
    absent: dict[str, tuple[str, ...]] = {}

    def add(text: str, gold: tuple[str, ...], group: str, lang: str) -> str:
        qid = f"chat-{len(questions) + 1:03d}"
        questions.append(Question(qid, text, tuple(dict.fromkeys(gold)), group, lang))
        return qid

    for conversation in conversations:
        lang = "ko" if conversation.korean else "en"
        templates = QUESTIONS[lang]

        def ask(kind: str, facts: list[Fact], group: str, extra: dict[str, str] | None = None,
                conversation: Conversation = conversation, lang: str = lang, templates: dict = templates) -> None:
            owner = facts[0].owner
            fields = _fields({k: v for f in facts for k, v in f.values.items()}, owner,
                             conversation.partner(owner), rng) | (extra or {})
            gold = tuple(conversation.path(f.session) for f in sorted(facts, key=lambda f: f.session))
            add(rng.choice(templates[kind]).format(**fields), gold, group, lang)

        a, b = conversation.a, conversation.b
        for speaker in (a, b):
            for kind in rng.sample(FACT_KINDS, SINGLE_PER_SPEAKER):
                ask(kind.rstrip("12") if kind.startswith("trip") else kind, [conversation.fact(speaker, kind)],
                    "single-session")
        both = {"a": a.name, "b": b.name, "a_rang": josa(a.name, "이랑", "랑"), "b_i": josa(b.name, "이", "가")}
        multi = [(f"{one}+{two}", speaker, (one, two)) for speaker in (a, b)
                 for one, two in (("job", "move"), ("trip1", "trip2"), ("hobby1", "hobby2"), ("research", "job"))]
        multi += [("pets", None, ("pet",)), ("books", None, ("book",)), ("moves", None, ("move",))]
        chosen = 0
        for kind, speaker, kinds in rng.sample(multi, len(multi)):
            if speaker is None:
                facts = [conversation.fact(a, kinds[0]), conversation.fact(b, kinds[0])]
            else:
                facts = [conversation.fact(speaker, k) for k in kinds]
            if len({f.session for f in facts}) < 2:
                continue
            ask(kind, facts, "multi-session", both)
            chosen += 1
            if chosen == MULTI_PER_CONVERSATION:
                break
        temporal = [(kind, speaker) for speaker in (a, b) for kind in ("trip-order", "hobby-span", "pet-move")]
        for kind, speaker in rng.sample(temporal, TEMPORAL_PER_CONVERSATION):
            if kind == "trip-order":
                trips = [conversation.fact(speaker, "trip1"), conversation.fact(speaker, "trip2")]
                cities = [t.values["city"] for t in rng.sample(trips, 2)]
                extra = {"c1": cities[0], "c2": cities[1], "c1_rang": josa(cities[0], "이랑", "랑")}
                ask(kind, trips, "temporal", extra)
            elif kind == "hobby-span":
                ask(kind, [conversation.fact(speaker, "hobby1"), conversation.fact(speaker, "hobby2")], "temporal")
            else:
                ask(kind, [conversation.fact(speaker, "pet"), conversation.fact(speaker, "move")], "temporal")
        pool = rng.sample(UNANSWERABLE[lang], 2 * UNANSWERABLE_PER_SPEAKER)
        for index, (template, words) in enumerate(pool):
            owner = (a, b)[index % 2]
            qid = add(template.format(**_fields({}, owner, conversation.partner(owner), rng)), (), "unanswerable",
                      lang)
            absent[qid] = words
    return questions, absent


def generate(seed: int = 0) -> tuple[dict[str, str], list[Question], dict[str, tuple[str, ...]]]:
    """The vault's files (path -> text), the questions and each unanswerable question's absent words."""
    rng = random.Random(f"chat-{seed}")
    conversations = _conversations(rng)
    files = {conversation.path(index): _session_text(conversation, index, rng)
             for conversation in conversations for index in range(len(conversation.dates))}
    questions, absent = _questions(conversations, rng)
    return files, questions, absent


def absent_terms(seed: int = 0) -> dict[str, tuple[str, ...]]:
    """For each unanswerable question id: the words that no file of the vault contains."""
    return generate(seed)[2]


def build_set(vault: Path, seed: int = 0) -> RetrievalSet:
    """Write the chat vault into ``vault`` (only changed files are rewritten) and return its questions."""
    files, questions, absent = generate(seed)
    description = (f"{CONVERSATIONS} two-person conversations ({KOREAN_CONVERSATIONS} Korean), one note per session; "
                   "facts stated once, speakers' names and small talk in every session")
    return finish_set(NAME, Path(vault), files, questions, absent, description)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the vault into")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(summary(build_set(args.out, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
