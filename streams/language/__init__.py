"""The language rules of memstream, in one leaf package (it imports nothing from the rest of
`streams` but `streams.errors`): English chat text in, words, sentences, dates and names out.

- `wordlists`: the word lists, data files under `data/` (one word list a file), read once.
- `sentences`: splitting, words, greeting/filler/question detection, cleaning.
- `signals`: the content signals of a sentence and the memory type they point to.
- `fact_sentences`: the choice of the sentences a turn's facts (or its note) are written from.
- `dates`: date phrases → intervals of days, for the write side (`resolve_dates`,
  `mentioned_interval`) and the read side (`time_window`).
- `rewriting`: a sentence as a fact's summary (third person, neutral tone).
- `mentions`: pronouns resolved to names, compound sentences split, profile keys, entities, tags.
- `captions`: a shared image's caption in chat text (LoCoMo's `[shares an image: …]`).
- `stemming`: the one Snowball stemmer.
- `sensitive`: health, religion, politics and addresses stated about someone (seed 004 §2).
- `answers`: short yes/no answers to a consent proposal.

A new word list: a file `data/<name>.txt` and `word_list("<name>")` where a rule reads it. A new
date phrase: `dates` (its docstring says where). The rules extractor that applies them, step by
step, is `streams/write/extraction.py`; hand-reviewed golden turns pin what it writes
(tests/unit/language/golden/, tests/unit/language/test_golden.py).
"""
