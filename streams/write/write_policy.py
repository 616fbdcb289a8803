"""One write policy (docs/architecture.md#policy): whatever enters a memory passes it first.

Every path calls the same `WritePolicy`: the facts of a chat turn (`streams.write.facts`, a
"remember that …" included), the episode a turn closes (`streams.pipeline.ingest`), a command's
new text (an edit, from the registry's `PATCH /v1/users/{u}/memories/{id}` or any producer of
`memory.commands`: `streams.memory.commands`), and the summaries the lifecycle writes
(consolidation, insights). The rules, in order, each refusal named by one reason (the
`memstream_policy_blocked_total` label, `metrics.POLICY_BLOCKS`):

1. no secret — API keys, tokens, passwords, PINs, one-time codes, card numbers
   (`streams.write.policy`): the reason is the secret's kind (`secret`, `password`, …), and no
   request ("remember that …") lifts it;
2. no blocked topic (`blocked_topic`);
3. no sensitive personal data (`streams.language.sensitive`: health, religion, politics, sexual
   orientation, union membership, biometrics, precise finances, exact address), unless the
   user consented to that kind for this memory (`sensitive_<kind>`);
4. the writing rules (`streams.write.writing`): a text the normaliser can repair (whitespace,
   capitals, final period, length cut at a word, first person rewritten naming the subject) is
   stored repaired; one it cannot is refused (`writing_<violation>`).

An episode is stricter: it is made only of what the policy admits, so a sentence the policy
refuses, and any other of the conversation naming what that sentence rests on ("Lupus"), never
reaches one (`clean`), and no consent applies to it; a fact naming it is refused likewise
(`refused_terms`, `streams.write.facts`).
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from streams.language.rewriting import third_person
from streams.language.sensitive import KINDS, findings, sentence_spans
from streams.observability.metrics import POLICY_BLOCKS
from streams.settings import WriteSettings
from streams.write.policy import find_secrets
from streams.write.writing import FIRST_OR_SECOND_PERSON, MAX_CHARS, normalise_summary, validate_summary

BLOCKED_TOPIC = "blocked_topic"
Consent = bool | Collection[str]
"""What the user agreed to have stored: True for every sensitive kind (an explicit "remember
that …"), else the kinds agreed to (none by default)."""


def mentions_topic(text: str, topics: Iterable[str]) -> bool:
    """Whether `text` mentions any of `topics` (whole words, any case)."""
    return any(re.search(rf"\b{re.escape(t)}\b", text, re.I) for t in topics if t)


def count(reason: str) -> str:
    """Count one refusal (`metrics.POLICY_BLOCKS`); return its reason."""
    POLICY_BLOCKS.labels(reason=reason).inc()
    return reason


@dataclass(frozen=True)
class Admission:
    """What may be stored of a text: the text as repaired, or the reason it may not be."""

    text: str | None
    reason: str | None = None

    @property
    def admitted(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class WritePolicy:
    """The policy of one worker: which sensitive kinds are held back, how long a summary is."""

    sensitive: tuple[str, ...] = KINDS
    max_chars: int = MAX_CHARS

    @classmethod
    def of(cls, write: WriteSettings) -> WritePolicy:
        kinds = tuple(c.strip() for c in write.sensitive_categories.split(",") if c.strip())
        return cls(kinds, write.summary_max_chars)

    def refusal(self, text: str, blocked_topics: Iterable[str] = (), *,
                consented: Consent = False) -> str | None:
        """Why `text` may not be stored (rules 1-3 of the module doc), or None."""
        secrets = find_secrets(text)
        if secrets:
            return secrets[0]
        if mentions_topic(text, blocked_topics):
            return BLOCKED_TOPIC
        if consented is True:
            return None
        agreed = set(consented or ())
        for finding in findings(text, self.sensitive):
            if finding.kind not in agreed:
                return f"sensitive_{finding.kind}"
        return None

    def sensitive_kinds(self, text: str) -> set[str]:
        """The held-back kinds `text` states something about (what an edit of it may keep)."""
        return {f.kind for f in findings(text, self.sensitive)}

    def refused_terms(self, text: str) -> dict[str, str]:
        """The names the refused statements of `text` rest on ("lupus", "zoloft") → the reason:
        a fact or an episode that names one repeats what the policy refused, in other words."""
        return {term: f"sensitive_{f.kind}" for f in findings(text, self.sensitive) for term in f.terms}

    def admit(self, text: str, memory_type: str = "semantic", *, blocked_topics: Iterable[str] = (),
              consented: Consent = False, subject: str | None = None) -> Admission:
        """`text` as it may be stored (rules 1-4), or why not. `subject` names whom a text in
        the first person is about ("I moved to Porto" → "Ana moved to Porto."); without one,
        such a text is refused."""
        topics = tuple(blocked_topics)
        reason = self.refusal(text, topics, consented=consented)
        if reason is not None:
            return Admission(None, reason)
        repaired = normalise_summary(text, self.max_chars)
        problems = validate_summary(repaired, memory_type, max_chars=self.max_chars)
        if FIRST_OR_SECOND_PERSON in problems and subject:
            repaired = normalise_summary(third_person(repaired, subject), self.max_chars)
            problems = validate_summary(repaired, memory_type, max_chars=self.max_chars)
        if problems:
            return Admission(None, f"writing_{problems[0]}")
        reason = self.refusal(repaired, topics, consented=consented)
        return Admission(repaired, None) if reason is None else Admission(None, reason)

    def clean(self, texts: Sequence[str], blocked_topics: Iterable[str] = ()) -> list[str]:
        """`texts` (a conversation's, in order) without the sentences the policy refuses, nor
        those that name what a refused sentence of any of them rests on ("I was diagnosed with
        Lupus." … "Lupus keeps me home."), nor those mentioning a blocked topic: what an episode
        may be made of (no consent applies). The sentences kept are as they were."""
        topics = tuple(blocked_topics)
        refused = [findings(text, self.sensitive) if text else [] for text in texts]
        terms = tuple({term for found in refused for f in found for term in f.terms})
        return [self._kept(text, [f.start for f in found], topics, terms)
                for text, found in zip(texts, refused)]

    @staticmethod
    def _kept(text: str, starts: list[int], topics: tuple[str, ...], terms: tuple[str, ...]) -> str:
        kept = []
        for lo, hi in sentence_spans(text):
            sentence = text[lo:hi]
            if (any(lo <= s < hi for s in starts) or find_secrets(sentence)
                    or mentions_topic(sentence, topics) or mentions_topic(sentence, terms)):
                continue
            kept.append(sentence)
        return "".join(kept).strip()
