"""No input costs more than linear time (issue 24), proven by counts, never by the clock.

The secret scan hands no detector more than one window (`policy.scan_windows`) of any text,
however long and hostile: counted on the characters each detector call is given, so the old
scan, which handed a 256 KiB dead letter whole to patterns that are quadratic on it, fails here
at once. The sentence rules compare a sentence's names pairwise only up to `MAX_ENTITIES`
(counted on the comparisons). And every pattern rewritten to be linear is checked against the
quadratic original it replaces on hostile mixes short enough for the original: same matches,
same groups, so behaviour on any text is unchanged.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

import pytest
from detect_secrets.plugins import keyword as ds_keyword
from hypothesis import example, given
from hypothesis import strategies as st

from benchmarks.adversarial_cost import CLASSES
from streams.pipeline.dead_letters import kept_bytes
from streams.language import captions, mentions, rewriting, sentences, signals
from streams.write import policy, procedural, trigger, writing
from tests.fuzzing import fuzz_settings
from tests.unit.fuzz.adversarial import RULE_PIECES, SECRET_PIECES, mixes, runs

WINDOW = 8192
"""The most characters a detector may be handed at once (`policy.SCAN_WINDOW`)."""
DETECTORS = ("_provider_hits", "_keyword_hits", "_password_hits", "_otp_hits", "_card_hits")


def _record(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Characters handed to each detector per call; a call over `WINDOW` fails at once, before
    the detector runs (the old scan would take minutes to fail otherwise)."""
    sizes: dict[str, list[int]] = {name: [] for name in DETECTORS}
    for name in DETECTORS:
        real = getattr(policy, name)

        def counted(text: str, *args: object, _real=real, _name=name) -> Iterator[object]:
            sizes[_name].append(len(text))
            assert len(text) <= WINDOW, f"{_name} handed {len(text)} characters"
            return _real(text, *args)

        monkeypatch.setattr(policy, name, counted)
    return sizes


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    return _record(monkeypatch)


def _assert_linear(sizes: dict[str, list[int]], text: str, scans: int = 1) -> None:
    """Each of `scans` scans of `text` had each detector read each character about once: at
    most one call per window, the windows adding up to little more than the text."""
    windows = policy.scan_windows(text)
    covered = sum(end - start for start, end in windows)
    assert covered <= 1.3 * len(text) + WINDOW
    for name, calls in sizes.items():
        assert len(calls) <= scans * len(windows), name
        assert sum(calls) <= scans * covered, name


# --- the secret scan: bounded windows ----------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CLASSES))
def test_no_detector_is_handed_more_than_a_window(name: str, handed: dict[str, list[int]]) -> None:
    text = CLASSES[name](40_000)
    policy.find_secrets(text)
    policy.redact(text)
    _assert_linear(handed, text, scans=2)


def test_a_dead_letter_at_its_limit_is_scanned_in_windows(handed: dict[str, list[int]]) -> None:
    text = CLASSES["secret `a`a`a"](262_144)
    kept, truncated, _ = kept_bytes(text.encode(), 262_144)
    assert not truncated and len(kept) <= 262_144
    _assert_linear(handed, text)
    assert len(handed["_provider_hits"]) == len(policy.scan_windows(text)) > 262_144 // WINDOW


@fuzz_settings(25)
@given(text=runs())
def test_no_detector_is_handed_more_than_a_window_on_any_run(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        sizes = _record(monkeypatch)
        policy.find_secrets(text)
        _assert_linear(sizes, text)


@fuzz_settings(200)
@given(size=st.integers(0, 60_000), spaces=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_windows_cover_the_text_and_overlap(size: int, spaces: int, seed: int) -> None:
    text = "".join(" " if (i * 7919 + seed) % (4 ** spaces + 3) == 0 else "x" for i in range(size))
    windows = policy.scan_windows(text)
    assert windows[0][0] == 0 and windows[-1][1] == size
    assert all(0 < end - start <= policy.SCAN_WINDOW for start, end in windows if size)
    for (_, end), (start, _) in zip(windows, windows[1:]):
        assert end - start >= policy.SCAN_OVERLAP  # a secret this long is whole in one window
    assert policy.SCAN_WINDOW == WINDOW


SECRETS = ["ghp_FAKEabcdefghijklmnopqrstuvwxyz012345", "sk-ant-api03-FAKEFAKEFAKEFAKEFAKEFAKE-xyz",
           "AKIAIOSFODNN7EXAMPLE", "password: Xy7$abc9q"]


@fuzz_settings(60)
@given(filler=runs(), secret=st.sampled_from(SECRETS), where=st.floats(0, 1))
def test_a_secret_anywhere_in_a_long_hostile_text_is_found(filler: str, secret: str,
                                                           where: float) -> None:
    at = int(len(filler) * where)
    text = f"{filler[:at]} {secret} {filler[at:]}"
    assert policy.find_secrets(text)
    assert secret.split()[-1] not in policy.redact(text)


# --- the secret scan: linear forms of detect-secrets' patterns ---------------------------------

def _keyword_matches(pattern: re.Pattern[str], group: int, text: str) -> list[tuple[int, ...]]:
    return [(*m.span(group), *m.span(1), m.end()) for m in pattern.finditer(text)]


@fuzz_settings(400)
@given(text=mixes(SECRET_PIECES))
@example(text="secret `a`a`a")
@example(text="x`a`a'==pwd `b` == secret")
@example(text="secret`secret`,`;'a`;")
@example(text="api_keyapi_key: 'x' password = \"hunter2\"")
def test_keyword_rules_match_as_detect_secrets_does(text: str) -> None:
    originals = ds_keyword.CONFIG_DENYLIST_REGEX_TO_GROUP.items()
    for (source, group), rule in zip(originals, policy._KEYWORD_RULES, strict=True):
        scanned = policy._mask_hopeless_backticks(text, rule.closing) if rule.closing else text
        assert _keyword_matches(rule.pattern, group, scanned) == _keyword_matches(source, group, text)


@fuzz_settings(300)
@given(text=mixes(SECRET_PIECES))
@example(text="sk-sk-aaaaaaaaaaaaaaaaaaaaT3BlbkFJaaaaaaaaaaaaaaaaaaaa")
@example(text="xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig")
@example(text="////registry.npmjs.org/:_authToken=npm_abc\n//x")
def test_provider_patterns_find_what_detect_secrets_finds(text: str) -> None:
    for plugin in policy._plugins():
        original = type(plugin)()
        assert sorted(plugin.analyze_string(text)) == sorted(original.analyze_string(text))


# --- the sentence rules ------------------------------------------------------------------------

def test_names_are_compared_pairwise_only_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    cap = 32 * 32
    calls = 0
    search = re.search

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        assert calls <= cap, "names compared with every other name"
        return search(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(signals.re, "search", counted)
    names = CLASSES["distinct names"](8000).removeprefix("I met ")
    sentence = "I met Ann, Ann " + names.replace(", ", ", Ann ")  # Ann, Ann Aaaa, Ann Aaab, …
    entities = signals.sentence_signals(sentence).entities
    assert len(entities) == signals.MAX_ENTITIES - 1 and "Ann" not in entities
    assert 0 < calls  # "Ann" was compared with the others


def _entities_compared_with_every_other(sentence: str) -> tuple[str, ...]:
    """The names of a sentence as they were chosen before the cap (a square of comparisons)."""
    found = [e for e in signals._ENTITY.findall(sentence) if e not in signals._NOT_ENTITIES]
    if m := signals._LEADING_NAME.match(sentence):
        first = m.group(1).split()[0].rstrip(".,")
        if first not in signals._NOT_ENTITIES and first.lower() not in signals._NOT_NAME_OPENERS:
            found.insert(0, m.group(1).rstrip("."))
    return tuple(e for e in dict.fromkeys(found)
                 if not any(e != o and re.search(r"\b" + re.escape(e) + r"\b", o) for o in found))


@fuzz_settings(200)
@given(words=st.lists(st.sampled_from(["Harry", "Potter", "Harry Potter", "Anna", "Rock'n",
                                       "of", "the", "and", "I", "met", ",", "Mary-Jane", "Jane"]),
                      max_size=30))
def test_names_are_chosen_as_before(words: list[str]) -> None:
    sentence = "I met " + " ".join(words)
    assert signals._entities_of(sentence) == _entities_compared_with_every_other(sentence)


@lru_cache(maxsize=1)
def _quadratic_originals() -> dict[str, tuple[re.Pattern[str], re.Pattern[str], str]]:
    """Pattern → (its linear form, its form before issue 24, how the rules use it)."""
    return {
        "_JUST_SO": (sentences._JUST_SO, re.compile(
            r",?\s*\b(?:just )?so (?:that )?you (?:know|are aware)\b,?\s*|\bfyi\b,?\s*", re.I),
            "sub"),
        "_TRAILING_LOOK": (sentences._TRAILING_LOOK, re.compile(
            r"\s*[,;–-]\s*(?:take a look|have a look|check it out|look|see)\s*[!.]*$", re.I), "sub"),
        "_STEPS": (signals._STEPS, re.compile(
            r"(?:\bstep \d|\bfirst(?:ly)?,? .+\bthen\b|(?:^|\n)\s*\d+[.)]\s|\bto \w+ .{0,40}\byou "
            r"(?:need|have|should)\b)", re.I), "found"),
        "_TRAILING_POLITE": (trigger._TRAILING_POLITE, re.compile(
            r"[\s,]+(?:please|pls|plz|thanks|thank you|ok|okay)\W*$", re.I), "sub"),
        "_INTENSIFIER": (rewriting._INTENSIFIER, re.compile(
            rewriting._INTENSIFIER.pattern.replace(r"(?<!\s)\s++(?:really", r"\s+(?:really", 1),
            rewriting._INTENSIFIER.flags), "sub"),
        "_ATTRIBUTE": (mentions._ATTRIBUTE, re.compile(mentions._ATTRIBUTE.pattern.replace(
            r"(?<!\s)(?:\s*+[,;]|\s++(?:-|–|and))", r"\s*(?:,|;|\s-|\s–|\sand)", 1)), "sub"),
        "_LIST_SEPARATOR": (procedural._LIST_SEPARATOR, re.compile(
            r"\s*(?:;|\n|,\s*(?:and\s+)?)\s*"), "split"),
        "_FINAL_MARKS": (writing._FINAL_MARKS, re.compile(r"[.!?…]+$"), "sub"),
        **{name: (new, re.compile(new.pattern.replace(trigger._COMMAND_PREFIX, trigger._PREFIX, 1),
                                  new.flags), "match")
           for name, new in (("_DONT_REMEMBER", trigger._DONT_REMEMBER),
                             ("_REMEMBER", trigger._REMEMBER), ("_FORGET", trigger._FORGET),
                             ("_PIN", trigger._PIN))},
    }


RULES = ["_JUST_SO", "_TRAILING_LOOK", "_STEPS", "_TRAILING_POLITE",
         "_INTENSIFIER", "_ATTRIBUTE", "_DONT_REMEMBER", "_REMEMBER", "_FORGET", "_PIN",
         "_LIST_SEPARATOR", "_FINAL_MARKS"]


def _use(pattern: re.Pattern[str], how: str, text: str) -> object:
    if how == "split":
        return pattern.split(text)
    if how == "sub":
        return pattern.sub(lambda m: f"<{m.group(0)}|{m.groupdict()}>", text)
    if how == "found":
        return bool(pattern.search(text))
    m = pattern.match(text)
    return m and (m.span(), m.groupdict())


def test_each_quadratic_original_differs_from_its_linear_form() -> None:
    originals = _quadratic_originals()
    assert sorted(originals) == sorted(RULES)
    assert all(new.pattern != old.pattern for new, old, _ in originals.values())


@pytest.mark.parametrize("name", RULES)
@fuzz_settings(300)
@given(text=mixes(RULE_PIECES))
def test_rule_patterns_match_as_their_quadratic_originals(name: str, text: str) -> None:
    new, old, how = _quadratic_originals()[name]
    assert _use(new, how, text) == _use(old, how, text)


_NAMED_AGE_BEFORE = re.compile(
    r"\b" + mentions._PET + r"\s+(?:named|called)\s+([A-Z][a-z]+)\b.*?\b(?:[Ss]he|[Hh]e|[Ii]t|who|\2)"
    r"(?:\s+is|" + mentions._APOS + r"s|\s+turned|\s+turns)\s+(?:now\s+)?(\d{1,2})\b")
NAMED_PIECES = ["a dog", " ", "named", "called", "Max", "Luna", "She", "she", "It", "who", "is",
                "turned", "’s", "'s", "now", "3", "12", ",", ".", "and", "Max is 4"]


@fuzz_settings(300)
@given(text=mixes(NAMED_PIECES).filter(lambda t: len(t) <= 200))
@example(text="a dog named Max and a cat named Luna. Luna is 3")
def test_a_named_age_is_found_as_before_within_200_characters(text: str) -> None:
    named_age = next(p for p, _ in mentions._KEYS if ".{0,200}?" in p.pattern)
    new = named_age.search(text)
    old = _NAMED_AGE_BEFORE.search(text)
    assert (new and (new.span(), new.groups())) == (old and (old.span(), old.groups()))


def _pronouns_named_one_by_one(s: str) -> str:
    """How pronouns were named before issue 24: each naming rescanned the rest of the text."""
    for m in mentions._NAMED.finditer(s):
        named = m.group(1) or m.group(3)
        s = s[: m.end()] + re.sub(r"\b(?:[Ss]he|[Hh]e)\b", named, s[m.end():], count=1)
    return s


@fuzz_settings(300)
@given(text=mixes(["named", "called", " ", "Bob", "Amy", "She", "she", "my dog", "My sister",
                   "and", "loves", ",", ".", "the", "Sheila", "BobShe", "x"]))
def test_pronouns_are_named_as_before(text: str) -> None:
    # names as long as the pronouns: the old loop's positions never drifted
    assert mentions._name_the_pronouns(text)[0] == _pronouns_named_one_by_one(text)


def test_pronouns_are_named_where_they_are() -> None:
    # the old loop read later positions in the text as rewritten so far: "Bo" for "she" moved
    # the rest one character, twice, and the last "he" was missed
    text = "named Bo she, named Bo she, named Lu he is"
    assert mentions._name_the_pronouns(text)[0] == "named Bo Bo, named Bo Bo, named Lu Lu is"


def test_naming_pronouns_reads_a_sentence_once(monkeypatch: pytest.MonkeyPatch) -> None:
    read = 0
    sub = re.sub

    def counted(pattern: object, repl: object, string: str, *args: object, **kwargs: object) -> str:
        nonlocal read
        read += len(string)
        return sub(pattern, repl, string, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(mentions.re, "sub", counted)
    sentence = CLASSES["a dog named Max…"](8000)
    mentions.resolve_he_she(["I have a dog named Rex.", sentence])
    assert read <= 2 * len(sentence)  # the old loop handed re.sub the rest of it per naming


_CAPTION_BEFORE = re.compile(r"\s*\[shares an image:\s*(?P<caption>[^\]]*)\]\s*$")


@fuzz_settings(300)
@given(text=mixes(RULE_PIECES + ["[shares an image: a dog]", "]", " ] "]))
@example(text="hi [shares an image: a dog] [shares an image: a cat]  ")
def test_captions_are_split_off_as_before(text: str) -> None:
    m = _CAPTION_BEFORE.search(text)
    before = (text[: m.start()].rstrip(), m.group("caption").strip() or None) if m else (text, None)
    assert captions.split_image_caption(text) == before
