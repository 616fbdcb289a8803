r"""Sentences of chat text: splitting (`streams/language/splitting.py`, a library's), words,
greetings, filler and questions, and cleaning.

Cleaning drops leading fillers, vocatives, hedges, slang, asides ("just so you know"), and gives
subjectless chat its subject back ("Gonna …" → "I'm going to …"), a demonstrative its article,
and "here's …" with a photo its sense ("I shared a photo of …"). The content signals a sentence
is scored by are `streams/language/signals.py`; the choice of the sentences a turn's facts are
written from, `streams/language/fact_sentences.py`. (Was `streams/write/text_rules.py`.)

Every rule reads a text in linear time (a turn holds up to 8,000 characters of anyone's text).
Where a pattern opens on a run of spaces, it starts only where the run starts (`(?<!\s)`) and
takes the run whole (`\s*+`): a try from inside the run reaches the same place as the one from
its start, so it could only fail again, after rescanning the run.
"""
from __future__ import annotations

import re

from streams.language.memo import text_memo
from streams.language.wordlists import word_list

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
_SINCE_WE_SPOKE = re.compile(r"\b(?:since|when) we last (?:spoke|talked|chatted|caught up|met)\b,?\s*",
                             re.I)
STOPWORDS = word_list("stopwords_rules")


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


@text_memo
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
