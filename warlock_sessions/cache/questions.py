"""What a question says, for the similarity step's refusals (docs/cache.md#what-it-refuses).

The similarity step serves *rewordings*: the same content words, in the same order, with
other filler words, inflections ("hour"/"hours", "cancelo"/"cancelar"), case or
punctuation, asked after a similar assistant turn. Anything else is another question to
it, however close the two embed: another content word, one more or one less, another order
("from savings to checking"/"from checking to savings"), other numbers (in the question or
in the turn before it), a negation more or less. Questions of fewer than three distinct
content words, and questions that point back at the conversation ("do the same for the
other one"), are not looked up by similarity at all.

English and Portuguese. Words are compared case-folded, with their accents ("avó" is not
"avô"); stopwords and negations are recognised with or without them.
"""

from __future__ import annotations

import unicodedata

import regex

from ..engine.text import fold
from ..providers.embedders import plain_words

#: The fewest distinct content words a question needs to be looked up by similarity.
MIN_CONTENT_WORDS = 3

_WORDS = regex.compile(r"[\p{L}\p{N}]+")
_NUMBERS = regex.compile(r"\d+(?:[.,:/-]\d+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_NT = regex.compile(r"\w+n't\b")
_NON = regex.compile(r"\bnon-\w")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _words(
    # English
    "a an the and or but if then so to of in on at by for with from about as into over "
    "is are was were be been being am do does did have has had i me my you your he she it "
    "we they them our their his her its this that these those there here what which who "
    "whom whose when where why how can could would should will shall may might must please "
    "just also too very really ok okay yes yeah yep sure thanks thank hi hello hey well "
    "some any all more most much many s"
    # Portuguese (without accents: words are looked up so)
    " o a os as um uma uns umas e ou mas se entao de do da dos das em no na nos nas por "
    "para pra com que qual quais quem quando onde como porque por que eu me meu minha voce "
    "voces ele ela eles elas nos nosso nossa isso isto esse essa este esta aquilo ser estar "
    "e sao foi era tem ter ha pode podem poderia seria sim ok obrigado obrigada oi ola bom "
    "boa muito muita mais menos ja so tambem favor ao aos pelo pela pelos pelas num numa"
)

NEGATIONS = _words(
    "not never none nobody nothing nor neither without cannot cant dont doesnt didnt isnt "
    "arent wasnt werent wont wouldnt shouldnt couldnt hasnt havent hadnt mustnt neednt "
    "shant mightnt aint nao nunca nem sem jamais nenhum nenhuma nada ninguem"
)
#: Words that only Portuguese uses among the stopwords: a text with one reads "no" as "in
#: the" ("no restaurante"), one without as English's "no".
_PORTUGUESE = _words(
    "o os um uma da do das dos em na nas para com que qual voce ele ela isso esse essa este "
    "esta nao sao tem pode obrigado ola tambem meu minha seu sua posso quero estou"
)
_PORTUGUESE_LETTERS = frozenset("ãõçâêôáéíóú")

#: Words that point back at the conversation: a question with one means something else
#: after another turn, so it is not looked up by similarity.
REFERS_BACK = _words(
    "it its this that these those them they one ones same other another former latter "
    "above previous isso isto esse essa esses essas aquele aquela aquilo ele ela eles elas "
    "mesmo mesma outro outra outros outras anterior"
)


def _counted(words: str) -> dict[str, str]:
    """Number words, from zero, as digits."""
    return {word: str(value) for value, word in enumerate(words.split())}


NUMBER_WORDS = {
    **_counted("zero one two three four five six seven eight nine ten eleven twelve"),
    **_counted("zero um dois tres quatro cinco seis sete oito nove dez onze doze"),
    "uma": "1",
    "duas": "2",
    "hundred": "100",
    "thousand": "1000",
    "million": "1000000",
    "cem": "100",
    "cento": "100",
    "mil": "1000",
    "milhao": "1000000",
    "milhoes": "1000000",
}

#: Endings of inflected forms, longest first; a stem keeps at least four letters.
SUFFIXES = tuple(
    sorted(
        _words(
            "ations ation ments ment ings ing ies ied ers er ed es s ly e "
            "acoes acao amentos amento mente ando endo indo ados adas idos idas ado ada ido "
            "ida ar ir as os a o"
        ),
        key=len,
        reverse=True,
    )
)


def words(text: str) -> list[str]:
    """The words of ``text``, case-folded, accents kept."""
    return _WORDS.findall(unicodedata.normalize("NFC", text.casefold()))


def stem(word: str) -> str:
    """``word`` without its inflection, judged by its accent-free spelling (a word with no
    ending to take off keeps its accents)."""
    bare = fold(word)
    for suffix in SUFFIXES:
        if bare.endswith(suffix) and len(bare) - len(suffix) >= 4:
            return bare[: -len(suffix)]
    return word


def content_words(text: str) -> list[str]:
    """The words that carry meaning (not stopwords, negations or numbers), stemmed, each
    once, in the order they first appear."""
    seen: list[str] = []
    for word in words(text):
        bare = fold(word)
        if bare in STOPWORDS or bare in NEGATIONS or bare.isdigit() or bare in NUMBER_WORDS:
            continue
        stemmed = stem(word)
        if stemmed not in seen:
            seen.append(stemmed)
    return seen


def numbers(text: str) -> list[str]:
    """The numbers of ``text`` in the order they appear: digits as written ("10.5", "05/03")
    and number words as digits ("two" is "2")."""
    found = [(match.start(), match.group()) for match in _NUMBERS.finditer(text)]
    for match in _WORDS.finditer(text.casefold()):
        bare = fold(match.group())
        if bare in NUMBER_WORDS:
            found.append((match.start(), NUMBER_WORDS[bare]))
    return [number for _, number in sorted(found)]


def negations(text: str) -> int:
    """How many negations ``text`` holds ("not", "n't", "non-", "não", and "no" in a text
    that is not Portuguese)."""
    plain = text.translate(_APOSTROPHES).casefold()
    bare = [fold(word) for word in _WORDS.findall(plain.replace("'", ""))]
    count = sum(1 for word in bare if word in NEGATIONS)
    count += sum(1 for found in _NT.findall(plain) if fold(found.replace("'", "")) not in NEGATIONS)
    count += len(_NON.findall(plain))
    portuguese = any(word in _PORTUGUESE for word in bare) or bool(_PORTUGUESE_LETTERS & set(plain))
    if "no" in bare and not portuguese:
        count += bare.count("no")
    return count


def refers_back(text: str) -> bool:
    return any(fold(word) in REFERS_BACK for word in words(text))


def too_short(text: str) -> bool:
    return len(content_words(text)) < MIN_CONTENT_WORDS


#: Prefixes that turn a word into its opposite ("enable"/"disable", "ativar"/"desativar").
NEGATING_PREFIXES = ("des", "dis", "non", "un", "in", "im", "de", "en")


def _unprefixed(word: str) -> str:
    bare = fold(word)
    for prefix in NEGATING_PREFIXES:
        if bare.startswith(prefix) and len(bare) - len(prefix) >= 4:
            return bare[len(prefix) :]
    return bare


def reworded(question: list[str], candidate: list[str]) -> str | None:
    """Between two paraphrases' content words: ``order`` (the same words, another order),
    ``substitution`` (one word swapped for one other: most often another thing, "Sunday"/
    "Monday"), ``opposite`` (a word and its prefixed opposite), or ``None``."""
    ours, theirs = set(question), set(candidate)
    if ours == theirs:
        return None if question == candidate else "order"
    only_ours, only_theirs = ours - theirs, theirs - ours
    if len(only_ours) == 1 and len(only_theirs) == 1:
        return "substitution"
    stems = {_unprefixed(word) for word in only_ours}
    if any(_unprefixed(word) in stems for word in only_theirs):
        return "opposite"
    return None


def mismatch(
    question: str,
    candidate: str,
    context: str = "",
    asked_after: str = "",
    *,
    paraphrases: bool = False,
) -> str | None:
    """Why ``candidate`` (asked after ``asked_after``) cannot answer ``question`` (asked
    after ``context``), however close they embed, or ``None``. By default only a rewording
    passes (the same content words in the same order); with ``paraphrases`` other words may
    differ too, except by order, by one word swapped, or by an opposite."""
    if numbers(question) != numbers(candidate):
        return "numbers"
    if numbers(context) != numbers(asked_after):
        return "context-numbers"
    if negations(question) % 2 != negations(candidate) % 2:
        return "negation"
    ours, theirs = content_words(question), content_words(candidate)
    if not paraphrases:
        return None if ours == theirs else "wording"
    return reworded(ours, theirs)


__all__ = [
    "content_words",
    "mismatch",
    "negations",
    "numbers",
    "plain_words",
    "refers_back",
    "too_short",
]
