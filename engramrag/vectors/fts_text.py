"""What LanceDB's full-text index sees of a chunk: words as they are, CJK runs as overlapping bigrams.

Why not one of LanceDB's own tokenizers alone (checked on lancedb 0.40 with Korean and English text):

- ``simple``, ``whitespace``, ``icu`` and ``icu/split`` keep a Korean eojeol whole: "파이프라인을" is one
  token, so the query "파이프라인" finds nothing; "박민지" does not find "박민지는".
- ``jieba/*`` and ``lindera/*`` need tokenizer models in Lance's model home, which nothing may download here.
- ``ngram`` (``ngram_min_length=2``) does match Korean stems inside eojeol, but it n-grams English too:
  on the 1,890 MuSiQue passages with its 100 questions, BM25 recall@5 / @10 / ALL@10 fell from
  49.9 / 56.3 / 25 (``simple``) to 45.2 / 53.0 / 22 (ngram 2–3), and the median query took 23 ms instead
  of 5 ms. The default ``ngram_min_length=3`` misses two-syllable words such as "회의".

So the index is LanceDB's native BM25 index with the ``simple`` tokenizer (English stemming and stop
words) over a derived column: non-CJK words pass through unchanged, and each CJK run (Hangul, Han, Kana)
becomes its overlapping character bigrams, as Lucene's CJKAnalyzer does. "파이프라인을" is indexed as
"파이 이프 프라 라인 인을" and the query "파이프라인" as "파이 이프 프라 라인": four of its bigrams
match, and compounds ("데이터파이프라인") match too. A single-syllable run stays one token. English is
scored exactly as with ``simple`` alone (same MuSiQue figures). Queries pass through :func:`fts_text`.
"""

from __future__ import annotations

from engramrag.embed.tokens import runs_by_script


def fts_tokens(text: str) -> list[str]:
    """The tokens the full-text index stores for ``text``, in order."""
    tokens: list[str] = []
    for cjk_run, word in runs_by_script(text):
        if word:
            tokens.append(word)
        else:
            tokens.extend([cjk_run[i : i + 2] for i in range(len(cjk_run) - 1)])
    return tokens


def fts_text(text: str) -> str:
    """The space-separated tokens the full-text index stores for ``text`` (and searches for a query)."""
    return " ".join(fts_tokens(text))
