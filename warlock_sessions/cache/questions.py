"""What a question says, for the similarity step's refusals: its content words (too few, and
the question is not looked up by similarity at all), its numbers and its negations (a near
neighbour that differs in either is a miss whatever its score), and opposites that differ
only by a negating prefix ("enable"/"disable", "ativar"/"desativar").

English and Portuguese; words are compared case-folded and without accents.
"""

from __future__ import annotations

from ..providers.embedders import plain_words

#: The fewest content words a question needs to be looked up by similarity.
MIN_CONTENT_WORDS = 3


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _words(
    # English
    "a an the and or but if then so to of in on at by for with from about as into over "
    "is are was were be been being am do does did have has had i me my you your he she it "
    "we they them our their his her its this that these those there here what which who "
    "whom whose when where why how can could would should will shall may might must please "
    "just also too very really ok okay yes yeah yep sure thanks thank hi hello hey well "
    "some any all more most much many"
    # Portuguese (without accents: words are compared so)
    " o a os as um uma uns umas e ou mas se entao de do da dos das em no na nos nas por "
    "para pra com que qual quais quem quando onde como porque por que eu me meu minha voce "
    "voces ele ela eles elas nos nosso nossa isso isto esse essa este esta aquilo ser estar "
    "e sao foi era tem ter ha pode podem poderia seria sim ok obrigado obrigada oi ola bom "
    "boa muito muita mais menos ja so tambem favor"
)

# "no" is left out: in Portuguese it is "in the" ("no restaurante"), far more often than an
# English question's negation.
NEGATIONS = _words(
    "not never none nobody nothing nor neither without cannot cant dont doesnt didnt isnt "
    "arent wasnt werent wont wouldnt shouldnt couldnt hasnt havent hadnt "
    "nao nunca nem sem jamais nenhum nenhuma nada ninguem"
)

NUMBER_WORDS = {
    **{
        word: str(value)
        for value, word in enumerate(
            [
                "zero",
                "one",
                "two",
                "three",
                "four",
                "five",
                "six",
                "seven",
                "eight",
                "nine",
                "ten",
                "eleven",
                "twelve",
            ]
        )
    },
    **{
        word: str(value)
        for value, word in enumerate(
            [
                "zero",
                "um",
                "dois",
                "tres",
                "quatro",
                "cinco",
                "seis",
                "sete",
                "oito",
                "nove",
                "dez",
                "onze",
                "doze",
            ]
        )
    },
    "uma": "1",
    "duas": "2",
    "first": "1",
    "second": "2",
    "third": "3",
    "primeiro": "1",
    "primeira": "1",
    "segundo": "2",
    "segunda": "2",
    "terceiro": "3",
    "terceira": "3",
}

#: Prefixes that turn a word into its opposite, longest first.
NEGATING_PREFIXES = ("des", "dis", "non", "un", "in", "im", "de", "en", "re")


def content_words(text: str) -> list[str]:
    return [word for word in plain_words(text) if word not in STOPWORDS | NEGATIONS]


def numbers(text: str) -> list[str]:
    return sorted(
        NUMBER_WORDS.get(word, word)
        for word in plain_words(text)
        if word.isdigit() or word in NUMBER_WORDS
    )


def negations(text: str) -> int:
    return sum(1 for word in plain_words(text.replace("'", "")) if word in NEGATIONS)


def _stem(word: str) -> str:
    for prefix in NEGATING_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 4:
            return word[len(prefix) :]
    return word


def opposed(first: str, second: str) -> bool:
    """Whether the two texts differ by a word and its prefixed opposite."""
    ours, theirs = set(plain_words(first)), set(plain_words(second))
    only_ours, only_theirs = ours - theirs, theirs - ours
    stems = {_stem(word): word for word in only_ours}
    return any(_stem(word) in stems and stems[_stem(word)] != word for word in only_theirs)


def _alike(first: str, second: str) -> bool:
    """Two forms of one word, as far as spelling tells: "deliver"/"deliveries",
    "cancelo"/"cancelar" (the same first five letters, or one the start of the other)."""
    shorter, longer = sorted((first, second), key=len)
    return longer.startswith(shorter) or (len(shorter) >= 5 and first[:5] == second[:5])


def substituted(first: str, second: str) -> bool:
    """Whether the two texts differ in exactly one content word each, as a question about
    another thing does ("Sunday"/"Monday", "dog"/"cat", "Portugal"/"Brazil")."""
    ours, theirs = set(content_words(first)), set(content_words(second))
    only_ours = [word for word in ours if not any(_alike(word, other) for other in theirs)]
    only_theirs = [word for word in theirs if not any(_alike(word, other) for other in ours)]
    return len(only_ours) == 1 and len(only_theirs) == 1


def mismatch(question: str, candidate: str) -> str | None:
    """Why ``candidate`` cannot answer ``question`` however close they embed, or ``None``:
    ``numbers`` or ``negation`` (they differ), ``opposite`` (a word and its negated form),
    ``substitution`` (one content word swapped for another: most often another thing)."""
    if numbers(question) != numbers(candidate):
        return "numbers"
    if negations(question) % 2 != negations(candidate) % 2:
        return "negation"
    if opposed(question, candidate):
        return "opposite"
    if substituted(question, candidate):
        return "substitution"
    return None
