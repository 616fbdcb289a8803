"""Sentence-level text rules shared by the trigger and the rules extractor (was
`streams/write/text_rules.py`).

Sentence splitting; greeting, filler, question and reaction detection; cleaning (leading
fillers, vocatives, hedges, slang, subjectless chat, demonstratives, "here's …" with a photo);
the content signals a sentence is scored by; and the choice of the sentences a turn's facts are
written from (`fact_sentences`), which the trigger uses too so that both agree.

Every rule reads a text in linear time (a turn holds up to 8,000 characters of anyone's text).
Where a pattern opens on a run of spaces, it starts only where the run starts (`(?<!\s)`) and
takes the run whole (`\s*+`): a try from inside the run reaches the same place as the one from
its start, so it could only fail again, after rescanning the run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from streams.language.wordlists import word_list
from topics.turns import Role

_SENTENCE_END = re.compile(  # the third form: a run of spaces that holds a line break
    r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|(?<=[!?])\s+|(?<!\s)(?=[^\S\n]*\n)\s+|"
    r"(?<=[.!?])\s+-\s+"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*|\d+")
_NORMALISE = re.compile(r"[^a-z0-9' ]+")

GREETING_WORDS = word_list("greetings")
FILLER_WORDS = word_list("fillers")
_PLEASANTRY = re.compile(
    r"^(?:(?:it'?s\s+)?(?:so\s+|really\s+)?(?:good|great|nice|lovely)\s+to\s+(?:see|hear from|meet|"
    r"talk to|chat with)\s+you|how\s+(?:are|have)\s+you|what'?s\s+up|talk\s+(?:to you\s+)?soon|"
    r"see\s+you|take\s+care|have\s+a\s+(?:good|great|nice)|long\s+time\s+no\s+see)\b", re.I
)
_QUESTION_START = re.compile(
    r"^(?:what|what's|whats|who|whom|whose|which|when|where|why|how|do|does|did|can|could|"
    r"would|will|should|shall|is|are|was|were|have|has|had|may|might|am|any|anything)\b", re.I
)
_FIRST_PERSON = re.compile(
    r"(?<![\w'’])[Ii](?![\w])|\b(?:[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|[Oo]urs?|us)\b"
)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|u|ur)\b", re.I)
_PREFERENCE = re.compile(
    r"\b(?:love|loved|like|liked|enjoy|enjoyed|hate|hated|prefer|preferred|adore|dislike|"
    r"favou?rite|fan of|into|passionate|obsessed|can't stand|keen on)\b", re.I
)
_PLAN = re.compile(
    r"\b(?:going to|gonna|planning|plan to|plans to|intend|will|'ll|hoping to|hope to|want to|"
    r"wanna|aim to|goal|looking forward|thinking of|thinking about|about to|next (?:week|month|"
    r"year|summer)|decided to|signing up|saving (?:up )?for)\b", re.I
)
_LIFE_EVENT = re.compile(
    r"\b(?:adopted|married|engaged|divorced|graduated|moved|started|began|joined|quit|retired|"
    r"born|passed away|died|hired|promoted|fired|bought|sold|won|lost|finished|completed|"
    r"launched|opened|visited|travell?ed|attended|went|got|became|raised|published|signed up|"
    r"ran|climbed|hiked|painted|wrote|built|made|took|received|celebrated|met|had)\b", re.I
)
_IDENTITY = re.compile(
    r"\b(?:my name is|call me|I'?m from|I am from|I live|I'm living|I work|I'm a|I am a|"
    r"I'm an|I am an|my (?:job|work|career|profession|username|handle|pronouns))\b"
    r"|(?-i:^(?!(?:It|This|That|There|He|She|They|What|Which|Who)\b)[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
    r" (?:is|was) (?:my|our) (?=[a-z])", re.I
)
_TIME_ANCHOR = re.compile(
    r"\b(?:yesterday|today|tonight|last (?:night|week|weekend|month|year|summer|winter|spring|"
    r"fall|autumn|(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*)|this (?:morning|afternoon|evening|week|"
    r"weekend|month|year)|ago|the other day|recently|earlier|(?:in|since) (?:19|20)\d\d|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|over the weekend)\b", re.I
)
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|hundred)\b", re.I)
_ENTITY = re.compile(r"(?<=[\w,;:] )(?:[A-Z][\w'’&-]*)(?: (?:of |the |de )?[A-Z][\w'’&-]+)*")
_LEADING_NAME = re.compile(  # "J.K. Rowling is …", "Harry Potter and …", "Fox Hollow is …"
    r"^[\"'“]?((?:[A-Z][\w'’&.-]*)(?: (?:of |the |de )?[A-Z][\w'’&.-]+)+)"
)
_NOT_ENTITIES = word_list("not_names")
_STEPS = re.compile(  # "first … then" from the first "first" of each line only: a later one
    # on the same line finds no "then" the first one did not
    r"(?:\bstep \d|^(?>[^\n]*?\bfirst(?:ly)?,? )[^\n]+?\bthen\b|^[^\S\n]*\d+[.)]\s|"
    r"\bto \w+ .{0,40}\byou (?:need|have|should)\b)", re.I | re.M
)
_PAST_VERB = re.compile(
    r"\b(?:went|visited|attended|saw|met|took|ran|finished|started|adopted|bought|got|had|did|"
    r"joined|travell?ed|celebrated|watched|played|won|lost|hiked|painted|made|tried|gave|"
    r"received|graduated|moved|began|came|left|spent|wrote|read|ate|flew|drove|climbed|"
    r"signed|volunteered|organi[sz]ed|hosted|\w+ed)\b", re.I
)
_DECISION = re.compile(
    r"\b(?:we(?:'ve| have)? decided|(?:I|we)(?:'ll| will) (?:go with|use|book|schedule|set up|"
    r"remind)|let's go with|the plan is|(?:I've|I have) (?:booked|scheduled|set|created|added|"
    r"saved)|decided to|agreed to|we agreed|going with)\b", re.I
)

MIN_SCORE = 1.5
"""Sentences scoring this much (`fact_score`) become facts: a first-person statement with a few
content words and no other signal just makes it (at importance 1, see the extractor); 2.0 lost
about 1 point of LoCoMo recall@10."""
_LEADING = re.compile(
    r"^(?:(?:oh|wow|yeah|yes|yep|haha+|lol|well|so|btw|by the way|also|and|but|honestly|"
    r"actually|anyway|anyways|hey|hi|ok|okay|aw+|omg|ugh|hmm+|thanks(?! for)|thank you(?! for)|"
    r"plus|man|yay|"
    r"sure|true|totally|definitely|guess what|you know what|to be honest)\b[\s,!.:;-]*)+", re.I
)
_REACTION_LEAD = re.compile(
    r"^(?:cool|nice|awesome|great|sweet|amazing|wonderful|perfect|aww+|yup|congrats|"
    r"congratulations|ha|wow)\s*[,!.]+\s*", re.I
)
_YOU_KNOW = re.compile(r"(?:^|(?<=[,;]))\s*you know\b(?! what),?\s*|,\s*you know(?=\s*[.!?]*$)", re.I)
_JUST_SO = re.compile(  # "…, just so you know." / "Just so you know, …": an aside, not content
    r"(?:,|(?<!\s))\s*+\b(?:just )?so (?:that )?you (?:know|are aware)\b,?\s*|\bfyi\b,?\s*", re.I)
_TELLING_YOU = re.compile(  # "… wanted to let you know I joined …" → "I joined …"
    r"^.{0,40}?\b(?:just )?(?:wanted|want|had|have|got) to (?:let you know|tell you|share with you|"
    r"update you)(?: that)?,?\s+(?=I\b|I['’]|my\b|we\b|our\b)", re.I
)
_SINGULAR = re.compile(r"(?<![\w'’])[Ii](?![\w])|\b[Mm](?:e|y|ine|yself)\b")
_SHOWING = (
    (re.compile(r"^(?:here(?:'|’)?s|this is|check out|take a look at|look at)\s+"
                r"(?:a |an |the |this |that |my |our )?(?:(?:quick|little|cool|new|recent) )?"
                r"(?:pic|photo|picture|snap|shot|photograph)\b", re.I), "I shared a photo"),
    (re.compile(r"^(?:here(?:'|’)?s|check out|take a look at|look at)\s+(?=my\b|our\b)", re.I),
     "I shared "),
)
_TRAILING_LOOK = re.compile(
    r"(?<!\s)\s*+[,;–-]\s*+(?:take a look|have a look|check it out|look|see)\s*[!.]*$", re.I
)
_VOCATIVE_HEAD = re.compile(  # "Mel, that sounds …"
    r"^[A-Z][a-z]+,\s+(?=(?i:i|you|we|that|this|it|those|these|thanks|so|glad|yes|yeah|no|my|let['’]?s|"
    r"congrats|congratulations|what|how|wow|good|great|sounds|love|keep|hope|take)\b)"
)
_VOCATIVE_TAIL = re.compile(r",\s+[A-Z][a-z]+\s*([.!]*)$")  # "… too, Mel." / "…, Mel!"
_BEFORE_VOCATIVE = word_list("vocative_followers")
_HEDGE = re.compile(  # "I think I …" / "Think I'm …" -> "I …"
    r"^(?:[Ii] )?(?:[Tt]hink|[Gg]uess|[Bb]elieve|[Ss]uppose|[Rr]eckon|[Ff]eel like|[Mm]ean)(?: that)?,?\s+"
    r"(?=(?:[Ii]|[Mm]y|[Ww]e)\b)"
)
_SUBJECTLESS = (
    (re.compile(r"^(?:gonna|going to|planning|hoping|trying|thinking|working|heading|looking "
                r"forward|off to|glad|happy|excited|thrilled|(?:super|so|really|pretty) (?=(?:glad|"
                r"happy|excited|thrilled|proud|grateful|thankful|busy|tired|stoked|nervous|lucky|sad|"
                r"sorry|ready|pumped|psyched|into|keen)\b))", re.I), "I'm "),
    (re.compile(r"^(?:been)\s+(?=(?:a|an|such|quite|ages|forever|so long|too long)\b)", re.I),
     "It's "),
    (re.compile(r"^(?:been)\b", re.I), "I've "),
    (re.compile(r"^just (?=[a-z]+ing\b)", re.I), "I'm "),
    (re.compile(r"^(?:gotta)\b", re.I), "I've "),
    (re.compile(r"^(?:loving|enjoying|feeling|missing)\b", re.I), "I'm "),
    (re.compile(r"^(?:never|always|also|still|totally|definitely)\s+(?:been|had|have|done|"
                r"seen|tried|went|got|love|loved|like|liked|want|wanted|thought|knew)\b", re.I), "I "),
    (re.compile(r"^(?:just|started|finished|went|got|had|can't wait|took|made|bought|checked|"
                r"tried|watched|saw|played|picked|spent|decided|learned|learnt|met|found|"
                r"visited|adopted|joined|signed up)\b", re.I), "I "),
)
_SLANG = tuple((re.compile(p, re.I), r) for p, r in (
    (r"\bgonna\b", "going to"), (r"\bwanna\b", "want to"), (r"\bfam\b", "family"),
    (r"\bedu\b", "education"), (r"\bgotta\b", "got to"), (r"(?<![\w'’])['’]em\b", "them"),
    (r"(?<!\w)['’]cause\b", "because"), (r"\bkinda\b", "kind of"),
))
_NOT_A_FACT = re.compile(  # proposals, encouragement, reactions
    r"^(?:let['’]?s|let us|let me|sounds|looks|seems|keep|stay|chase|don['’]?t|do not|make sure|"
    r"go for|hang in|have faith|believe in|never give up|good luck|enjoy|tell|give it|congrats|"
    r"congratulations|well done|good job|great job|wishing|hope you|hope your|thanks|thank you|"
    r"love (?:that|this|it|the|your|those|these)|can['’]?t wait to (?:see|hear)|fingers crossed|"
    r"(?:i['’]?d |would )?love to (?:hear|see|know|check(?: out)?) (?:more|it|that|this|them|"
    r"those|your|how|what|about|pics?|photos?|pictures?)\b|(?:i['’]?d |would )?love to (?:hear|"
    r"see|know)\W*$|"
    r"you got this|we got this|here['’]?s to|thanks for|thank you for|take a look|have a look|"
    r"check (?:it|this|that|them) out|look at (?:this|that|these|them|it)\b|"
    r"i['’]?m (?:so |really |very )?(?:sorry|glad|happy|proud|stoked|thrilled) (?:to hear|for you|"
    r"of you|that you|you))\b", re.I
)
_SINCE_WE_SPOKE = re.compile(r"\b(?:since|when) we last (?:spoke|talked|chatted|caught up|met)\b,?\s*",
                             re.I)
_HABIT = re.compile(r"\b(?:every (?:day|week|morning|night|weekend|month|year)|daily|weekly|"
                    r"usually|always|often|regularly|each (?:day|week))\b", re.I)
_ANAPHORIC = re.compile(r"^(?:it|its|that|this|they|them|their|those|these|he|she|there|his|her)\b",
                        re.I)
STOPWORDS = word_list("stopwords_rules")


def split_sentences(text: str) -> list[str]:
    """Split chat text into sentences (punctuation- and newline-based, no model)."""
    parts = _SENTENCE_END.split(text.strip())
    return [p.strip() for p in parts if p and p.strip()]


def words(text: str) -> list[str]:
    """Word tokens (letters with apostrophes, or digit runs)."""
    return _WORD.findall(text)


def _normalised(text: str) -> list[str]:
    """Lowercase word tokens without punctuation."""
    return _NORMALISE.sub(" ", text.lower().replace("’", "'")).split()


def is_greeting(sentence: str, names: tuple[str, ...] = ()) -> bool:
    """"Hi!", "Hey Mel!", "Good morning everyone", "Good to see you!"."""
    if _PLEASANTRY.match(sentence.strip()):
        return True
    toks = _normalised(sentence)
    lowered = {n.lower() for n in names}
    if not toks or toks[0] not in GREETING_WORDS:
        return False
    rest = [t for t in toks if t not in GREETING_WORDS and t not in lowered]
    return len(rest) <= 1 and all(t[:1].isalpha() for t in rest)


def is_filler(sentence: str) -> bool:
    """"ok", "thanks!", "haha", "lol", "That's so cool!": nothing worth storing."""
    toks = _normalised(sentence)
    return not toks or all(t in FILLER_WORDS for t in toks)


def is_question(sentence: str) -> bool:
    """A question: ends with `?`, or opens like one and has no statement punctuation."""
    s = sentence.strip()
    if s.endswith("?"):
        return True
    return bool(_QUESTION_START.match(s)) and not s.endswith((".", "!")) and len(words(s)) < 12


@dataclass(frozen=True)
class Signals:
    """Cheap content signals of one sentence."""

    first_person: bool
    second_person: bool
    preference: bool
    plan: bool
    life_event: bool
    identity: bool
    time_anchor: bool
    number: bool
    decision: bool
    entities: tuple[str, ...]
    n_words: int


def sentence_signals(sentence: str) -> Signals:
    """Compute the content signals of one sentence."""
    return Signals(
        first_person=bool(_FIRST_PERSON.search(sentence)),
        second_person=bool(_SECOND_PERSON.search(sentence)),
        preference=bool(_PREFERENCE.search(sentence)),
        plan=bool(_PLAN.search(sentence)),
        life_event=bool(_LIFE_EVENT.search(sentence)),
        identity=bool(_IDENTITY.search(sentence)),
        time_anchor=bool(_TIME_ANCHOR.search(sentence)),
        number=bool(_NUMBER.search(sentence)),
        decision=bool(_DECISION.search(sentence)),
        entities=_entities_of(sentence),
        n_words=len(words(sentence)),
    )


def _entities_of(sentence: str) -> tuple[str, ...]:
    """Capitalised names inside the sentence, and a multi-word name opening it."""
    found = [e for e in _ENTITY.findall(sentence) if e not in _NOT_ENTITIES]
    if m := _LEADING_NAME.match(sentence):
        first = m.group(1).split()[0].rstrip(".,")
        if first not in _NOT_ENTITIES and first.lower() not in _NOT_NAME_OPENERS:
            found.insert(0, m.group(1).rstrip("."))
    names = list(dict.fromkeys(found))[:MAX_ENTITIES]
    return tuple(e for e in names if not any(_inside(e, o) for o in names))


MAX_ENTITIES = 32
"""The most distinct names read from one sentence: each is checked against every other, a
square of work, and a sentence worth a fact names far fewer."""


def _inside(name: str, other: str) -> bool:
    """Whether `name` is a word or words of another name ("Harry Potter" makes "Potter"
    redundant)."""
    return (name != other and name in other
            and re.search(r"\b" + re.escape(name) + r"\b", other) is not None)


_NOT_NAME_OPENERS = word_list("not_name_openers")


def memory_type(sentence: str, signals: Signals | None = None) -> str:
    """semantic | episodic (past event with a time anchor) | procedural (step-by-step)."""
    sig = signals or sentence_signals(sentence)
    if _STEPS.search(sentence):
        return "procedural"
    if sig.time_anchor and _PAST_VERB.search(sentence) and not sig.plan:
        return "episodic"
    return "semantic"


def is_past_tense(sentence: str) -> bool:
    """A past-tense verb and no plan ("we hiked on Saturday", not "we'll hike on Saturday")."""
    return bool(_PAST_VERB.search(sentence)) and not _PLAN.search(sentence)


_THAT_ONE_IS = re.compile(  # "That one is Max, my childhood dog." → "Max is my childhood dog."
    r"^(?:this|that|it)(?: one)?(?:['’]s| is| was)\s+([A-Z][\w'’-]*(?: [A-Z][\w'’-]*)*),\s+"
    r"((?:my|our)\b[^,.!?]*)", re.I
)
_DETERMINER = re.compile(  # "These figurines I bought …" → "The figurines I bought …"
    r"^(?:(?P<sg>this|that)\s+(?P<w1>[a-z]+)|(?P<pl>these|those)\s+(?P<w2>[a-z]+))\b", re.I
)
_NOT_NOUN = word_list("not_nouns")
_SHOWING_IMAGE = re.compile(
    r"^(?:here(?:'|’)?s|here is|this is|these are|check out|take a look at|look at|meet)\s+"
    r"(?!(?:a |an |the |this |that |my |our )?(?:pic|photo|picture|snap|shot|photograph)\b)"
    r"(?!(?:this|that|these|those|it|them)\W*$)", re.I
)


def _demonstrative(s: str) -> str:
    """A leading demonstrative determiner becomes "The" ("This book is …" → "The book is …");
    a demonstrative pronoun ("This is great") is left alone."""
    if m := _THAT_ONE_IS.match(s):
        return f"{m.group(1)} is {m.group(2)}{s[m.end():]}"
    m = _DETERMINER.match(s)
    if not m:
        return s
    word = (m.group("w1") or m.group("w2")).lower()
    if word in _NOT_NOUN or word.endswith("ly"):
        return s
    if m.group("sg") and word.endswith("s") and not word.endswith("ss"):
        return s  # "This means …": a verb
    if m.group("pl") and not (word.endswith("s") or word in ("people", "children", "men",
                                                            "women", "kids")):
        return s  # "Those look …"
    return "The " + s[m.start("w1") if m.group("w1") else m.start("w2"):]


def is_expletive_it(sentence: str) -> bool:
    """"It feels like …", "It's important to …", "It's been a while since …": a dummy subject,
    not a pronoun that needs an antecedent."""
    return bool(_EXPLETIVE_IT.match(sentence))


_EXPLETIVE_IT = re.compile(
    r"^it(?:['’]s| is| was| has been|['’]s been| feels| felt| seems| seemed| looks| looked|"
    r" would be| will be)\s+(?:(?:so|really|very|super|pretty|such|always|been|a|an|"
    r"\w+(?:ly)?)\s+){0,3}?(?:to|that|how|when|like|being|since|as if|knowing|seeing|having|"
    r"getting|watching)\b", re.I,
)


def clean_sentence(sentence: str, image: bool = False) -> str:
    """Drop interjections and hedges; give subjectless chat ("Gonna …") its subject back.

    With `image` (the turn shares a photo), "Here's Toby at the park" reads as "I shared a photo
    of Toby at the park".
    """
    s = _YOU_KNOW.sub(" ", _JUST_SO.sub(" ", sentence))
    s = re.sub(r"\s+([,.!?])", r"\1", re.sub(r"\s{2,}", " ", s)).strip()
    s = _LEADING.sub("", _SINCE_WE_SPOKE.sub("", _TELLING_YOU.sub("", s))).strip()
    s = _LEADING.sub("", _REACTION_LEAD.sub("", s)).strip()
    s = _drop_vocative(s)
    s = _demonstrative(s)
    if image:
        s = _SHOWING_IMAGE.sub("I shared a photo of ", s)
    s = _HEDGE.sub("", s)
    for pattern, repl in _SHOWING:
        s = pattern.sub(repl, s)
    for pattern, subject in _SUBJECTLESS:
        if pattern.match(s):
            s = subject + s[0].lower() + s[1:]
            break
    for pattern, repl in _SLANG:
        s = pattern.sub(repl, s)
    return _TRAILING_LOOK.sub("", s)


def _drop_vocative(s: str) -> str:
    """Remove a listener's name used as an address ("Mel, …", "… too, Mel!")."""
    s = _VOCATIVE_HEAD.sub("", s)
    if m := _VOCATIVE_TAIL.search(s):
        before = s[: m.start()].rsplit(" ", 1)[-1].lower()
        if m.group(1).startswith("!") or before in _BEFORE_VOCATIVE:
            s = s[: m.start()] + m.group(1)
    return s


_COUNT_WORDS = word_list("count_words")


def content_words(sentence: str) -> int:
    """Number of words that carry content (no stopwords, pronouns, fillers); a number counts
    ("I have two kids", "I run 5 km every morning" state a quantity)."""
    return sum(1 for w in words(sentence)
               if w.isdigit() or w.lower() in _COUNT_WORDS
               or (len(w) > 2 and w.lower() not in STOPWORDS))


def fact_score(sentence: str, sig: Signals) -> float:
    """Content score of a cleaned sentence; `MIN_SCORE` and up is worth a fact."""
    s = 1.5 if _SINGULAR.search(sentence) else 1.0 * sig.first_person
    s += 2 * sig.preference + 1.5 * sig.plan + 2 * sig.life_event + 2 * sig.identity
    s += 0.5 * (min(len(sig.entities), 3) + sig.number + sig.time_anchor)
    s += 1.0 * bool(_HABIT.search(sentence))
    s += 0.5 if sig.n_words >= 6 else (-1.0 if sig.n_words < 4 else 0.0)
    if is_anaphoric(sentence):  # "It was great" / "They're my rock": not self-contained
        s -= 1.0 if sig.first_person else 2.0
    return s


def own_sentence(sentence: str, sig: Signals) -> bool:
    """About the speaker: first person and no second person."""
    return sig.first_person and not sig.second_person


def other_score(sentence: str, sig: Signals) -> float:
    """Content score of a sentence without first person ("She is 3.", "The hike was steep.").

    Lower than `fact_score` for the same content: such a sentence is mostly context for a
    neighbouring first-person sentence; it stands alone only with strong signals (named
    entities, numbers, dates, a preference or an event).
    """
    s = 1.0 * sig.preference + 1.0 * sig.plan + 1.0 * sig.life_event
    s += 0.5 * (min(len(sig.entities), 3) + sig.number + sig.time_anchor)
    s += 0.5 if sig.n_words >= 6 else (-1.0 if sig.n_words < 4 else 0.0)
    if is_anaphoric(sentence):
        s -= 2.0
    return s


def is_anaphoric(sentence: str) -> bool:
    """Opens on a pronoun or demonstrative ("It was great", "They're called …"); a dummy "it"
    ("It's important to …") does not count."""
    return bool(_ANAPHORIC.match(sentence)) and not is_expletive_it(sentence)


def skippable(sentence: str, names: tuple[str, ...] = ()) -> bool:
    """Greeting, filler, question, proposal, encouragement or reaction: never a fact."""
    return (not sentence or is_greeting(sentence, names) or is_filler(sentence)
            or is_question(sentence) or bool(_NOT_A_FACT.match(sentence)))


SIGNAL_TAGS = ("preference", "plan", "life_event", "identity")
"""The tags `signal_tags` gives: what kind of statement a fact is, not what it is about."""


def signal_tags(sig: Signals) -> list[str]:
    """Names of the signals that fired, as tags (`SIGNAL_TAGS`)."""
    return [t for t, on in zip(SIGNAL_TAGS, (sig.preference, sig.plan, sig.life_event, sig.identity))
            if on]


def scored_sentences(sentences: list[str], role: Role,
                     names: tuple[str, ...] = ()) -> list[tuple[float, int, str, Signals]]:
    """(score, index, sentence, signals) of every sentence that may hold a fact.

    `sentences` are cleaned (`clean_sentence`). User sentences must be about the speaker (first
    person), not about the listener, and not empty; assistant sentences count only when they
    state a decision (scored `MIN_SCORE`). The caller keeps those scoring `MIN_SCORE` and up.
    """
    out: list[tuple[float, int, str, Signals]] = []
    for i, s in enumerate(sentences):
        if not s or is_greeting(s, names) or is_filler(s) or is_question(s) or _NOT_A_FACT.match(s):
            continue
        sig = sentence_signals(s)
        if role == Role.assistant:
            if sig.decision:
                out.append((MIN_SCORE, i, s, sig))
        elif not sig.second_person and sig.first_person and content_words(s) >= 2:
            out.append((fact_score(s, sig), i, s, sig))
    return out


# --- fact sentences: what the extractor writes facts from -----------------------------------

OTHER_MIN = 1.0
"""A sentence without first person scoring this much (`other_score`) is a fact of its own
("Fox Hollow is a great trail to hike on weekends." → "Andrew said Fox Hollow is …")."""


@dataclass(frozen=True)
class Part:
    """One content sentence of a turn: cleaned text, position, score, signals, and whether it is
    about the speaker (first person) or a statement without first person."""

    index: int
    text: str
    score: float
    sig: Signals
    own: bool

    @property
    def head_score(self) -> float:
        """Score on the `fact_score` scale: a statement without first person at `OTHER_MIN`
        counts as `MIN_SCORE` and climbs half as fast, so first-person facts come first."""
        return self.score if self.own else MIN_SCORE + (self.score - OTHER_MIN) * 0.5


def content_parts(sentences: list[str], role: Role, names: tuple[str, ...] = ()) -> list[Part | None]:
    """Per cleaned sentence: its `Part`, or None when it is not content.

    User turns: first-person sentences about the speaker score by `fact_score`; sentences with
    neither first nor second person score by `other_score`; sentences about the listener
    (second person) are dropped. Assistant turns: decisions only.
    """
    out: list[Part | None] = []
    for i, s in enumerate(sentences):
        if skippable(s, names) or content_words(s) < 2:
            out.append(None)
            continue
        sig = sentence_signals(s)
        if role == Role.assistant:
            out.append(Part(i, s, MIN_SCORE, sig, True) if sig.decision else None)
        elif own_sentence(s, sig):
            out.append(Part(i, s, fact_score(s, sig), sig, True))
        elif not sig.first_person and not sig.second_person:
            out.append(Part(i, s, other_score(s, sig), sig, False))
        else:
            out.append(None)
    return out


def fact_sentences(sentences: list[str], role: Role, names: tuple[str, ...] = (),
                   max_facts: int = 3) -> list[Part]:
    """The best `max_facts` sentences of a turn to write facts from, in turn order.

    A sentence qualifies at `head_score` ≥ `MIN_SCORE` and when it does not open on a pronoun
    ("It was Matt Patterson." answers a question we cannot see; "They're my rock." needs the
    sentence before). Each fact is written from one sentence: on LoCoMo, joining a neighbouring
    sentence (for context, or when the best sentence is short) lowered recall — the longer
    summary embeds less sharply.
    """
    parts = [p for p in content_parts(sentences, role, names) if p is not None
             and p.head_score >= MIN_SCORE and not is_anaphoric(p.text)]
    best = sorted(parts, key=lambda p: (-p.head_score, p.index))[:max_facts]
    return sorted(best, key=lambda p: p.index)


NOTE_MIN_WORDS = 3
"""Content words a sentence needs to be kept as a note (`note_sentence`)."""


def note_sentence(text: str, names: tuple[str, ...] = (), image: bool = False) -> str | None:
    """The sentence of a user turn to keep as a note when the rules make no fact of it: the
    cleaned sentence with the most content words (at least `NOTE_MIN_WORDS`; the first on a
    tie) that is not a greeting, filler, question or reaction; None when there is none.

    Why: the fact rules want a first-person statement about the speaker, or one about neither
    party that does not open on a pronoun. Chat is elliptic ("Still working on opening a dance
    studio.", "Been reading that book you recommended"), answers what the turn before asked
    ("It's Seattle, I'm stoked for my game there next month!", "Their names are Pepper,
    Precious and Panda.") and says things about the listener; such turns left no memory, and
    on LoCoMo 38 questions the raw turns answered had no fact from any of their evidence turns.
    Kept as what the speaker said ("Jon said …"), they are found again: recall_any@10 +0.5 to
    +1.5 points (docs/benchmarks.md#recall), about one note per ten turns.
    """
    best, most = None, NOTE_MIN_WORDS - 1
    for raw in split_sentences(text):
        sentence = clean_sentence(raw, image=image)
        if not sentence or skippable(sentence, names):
            continue
        count = content_words(sentence)
        if count > most:
            best, most = sentence, count
    return best
