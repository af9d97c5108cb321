"""The words of a question, as the similarity step compares them: case-folded, with their
accents; stopwords, negations and numbers; and one form for a word written several ways
(its inflections, British and American or European and Brazilian spelling). Phrases, roles
and the refusals built on them are ``questions.py``'s."""

from __future__ import annotations

import unicodedata

import regex

from ..engine.text import fold
from ..providers.text import word_set

_WORDS = regex.compile(r"[\p{L}\p{N}]+")
_NUMBERS = regex.compile(r"\d+(?:[.,:/-]\d+)*")
APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_NT = regex.compile(r"\b\w+n't\b")
_NON = regex.compile(r"\bnon-\w")


STOPWORDS = word_set(
    # English
    "a an the and or but if then so to of in on at by for with from about as into over "
    "is are was were be been being am do does did have has had i me my you your he she it "
    "we they them our their his her its this that these those there here what which who "
    "whom whose when where why how can could would should will shall may might must please "
    "just also too very really ok okay yes yeah yep sure thanks thank hi hello hey well "
    "some any all much many s d ll ve re m want wanna like mine yours guys regarding"
    # Portuguese (without accents: words are looked up so)
    " o a os as um uma uns umas e ou mas se entao de do da dos das em no na nos nas por "
    "para pra com que qual quais quem quando onde como porque por que eu me meu minha voce "
    "voces ele ela eles elas nos nosso nossa isso isto esse essa este esta aquilo ser estar "
    "e sao foi era tem ter ha pode podem poderia seria sim ok obrigado obrigada oi ola bom "
    "boa muito muita ja so tambem favor ao aos pelo pela pelos pelas num numa "
    "meus minhas teu tua teus tuas seu sua seus suas nossos nossas posso podia consigo quero "
    "queria gostaria existe existem partir faco devo deve devemos ta vc vcs algum alguma "
    "alguns algumas sou somos eram foram seja sejam fosse estou estamos estao estava estavam "
    "esteve estiver estiverem esteja estejam"
)

NEGATIONS = word_set(
    "not never none nobody nothing nor neither without cannot cant dont doesnt didnt isnt "
    "arent wasnt werent wont wouldnt shouldnt couldnt hasnt havent hadnt mustnt neednt "
    "shant mightnt aint nao nunca nem sem jamais nenhum nenhuma nada ninguem"
)
#: Words that only Portuguese uses among the stopwords: a text with one reads "no" as "in
#: the" ("no restaurante"), one without as English's "no".
_PORTUGUESE = word_set(
    "os uma da das dos em na nas para com que qual voce ele ela isso esse essa este "
    "esta nao sao tem pode obrigado ola tambem meu minha seu sua posso quero estou quando "
    "onde quanto quanta quantos quantas pelo pela"
)
_PORTUGUESE_LETTERS = frozenset("ãõçâêôáéíóú")
#: Words that only English uses among the stopwords, weighed against Portuguese's: "Is the
#: shuttle to the airport free? Obrigado!" is English, "Do you fly to São Paulo?" too.
_ENGLISH = word_set(
    "the is are was were to of for with from can could does did you your my what which who "
    "where when why how this that there and or an it its be will would should have has"
)


def _counted(words: str) -> dict[str, str]:
    """Number words, from zero, as digits."""
    return {word: str(value) for value, word in enumerate(words.split())}


NUMBER_WORDS = {
    **_counted("zero one two three four five six seven eight nine ten eleven twelve"),
    **_counted("zero um dois tres quatro cinco seis sete oito nove dez onze doze"),
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
# "a"/"an" more often than 1: "one borrows", "uma mala" / "as malas" (1 in digits stays 1).
for _article in ("one", "um"):
    del NUMBER_WORDS[_article]


def _longest_first(endings: str) -> tuple[str, ...]:
    return tuple(sorted(word_set(endings), key=len, reverse=True))


_ENGLISH_ENDINGS = "ations ation ments ment ings ing ies ied ers er ed es s ly e"
_PORTUGUESE_ENDINGS = (
    "acoes acao amentos amento mente ando endo indo ados adas idos idas ado ada ido ida ar ir "
    "as os a o es s e"
)
#: Endings of inflected forms, longest first, by the text's language (English's "repair" is
#: no infinitive in "-ir"); both for a text of either. A stem keeps at least four letters.
SUFFIXES = {
    "en": _longest_first(_ENGLISH_ENDINGS),
    "pt": _longest_first(_PORTUGUESE_ENDINGS),
    "": _longest_first(f"{_ENGLISH_ENDINGS} {_PORTUGUESE_ENDINGS}"),
}


def words(text: str) -> list[str]:
    """The words of ``text``, case-folded, accents kept."""
    return _WORDS.findall(unicodedata.normalize("NFC", text.casefold()))


#: People whose last vowel is who they are, not an inflection: "o meu filho" is not "a
#: minha filha" ("cancelo" and "cancelar" are one act).
PEOPLE = word_set(
    "filho filha irmao irma tio tia neto neta sobrinho sobrinha primo prima amigo amiga "
    "namorado namorada aluno aluna menino menina senhor senhora medico medica enfermeiro "
    "enfermeira vizinho vizinha dono dona avo chefe moco moca rapaz rapariga"
)


def stem(word: str, language: str = "") -> str:
    """``word`` without its inflection, judged by its accent-free spelling (a word with no
    ending to take off keeps its accents; a person in ``PEOPLE`` keeps all but a plural's
    "s"). In a Portuguese text (``language="pt"``) a plural in "-ões", "-ães", "-éis" or
    "-ns" and a verb's "-m" ("abrem"/"abre") are inflections too."""
    bare = fold(word)
    if bare in PEOPLE:  # with its accents: "avó" is not "avô"
        return word
    if bare.endswith("s") and bare[:-1] in PEOPLE:
        return word[:-1]
    if language == "pt" and (singular := _portuguese_singular(bare)) != bare:
        word = bare = singular
    if (spelt := _one_spelling(bare, language)) != bare:
        word = bare = spelt
    return _without_ending(word, bare, language)


def _without_ending(word: str, bare: str, language: str) -> str:
    """``bare`` (``word`` folded) without its inflected ending, or ``word`` when it has
    none to take off. A word in "-ão" keeps it: "botão" is not "bota", nor "limão" "lima"."""
    if bare.endswith("ao") and not bare.endswith("acao"):
        return bare
    if bare.endswith(("ies", "ied")) and len(bare) > 6:  # "balconies", "balcony"
        return bare[:-3] + "y"
    if bare.endswith("ais") and len(bare) > 5:  # "animais", "animal"
        return bare[:-2] + "l"
    for suffix in SUFFIXES[language]:
        if bare.endswith(suffix) and len(bare) - len(suffix) >= 4 and bare[-2:] != "ss":
            stemmed = bare[: -len(suffix)]
            return _single(stemmed) if suffix in ("ing", "ed") else stemmed
    if bare.endswith("s") and not bare.endswith("ss") and len(bare) > 3:  # "bags", "pets"
        return bare[:-1]
    return word


def _portuguese_singular(bare: str) -> str:
    """A Portuguese word's accent-free spelling without its plural or its verb's "-m"
    ("cartões" "cartao", "hotéis" "hotel", "viagens" "viage", "abrem" "abre"), accents
    typed or not."""
    if len(bare) <= 4:
        return bare
    if bare.endswith(("oes", "aes")):
        return bare[:-3] + "ao"
    if bare.endswith("eis"):
        return bare[:-3] + "el"
    if bare.endswith("ns") and bare[-3] in "aeiou":
        return bare[:-2]
    if bare.endswith(("am", "em")) and not bare.endswith(("aram", "eram", "iram")):
        return bare[:-1]  # "abrem" "abre"; not "abriram", which is another tense
    return bare


#: A consonant European Portuguese writes and Brazilian does not ("óptica"/"ótica",
#: "recepção"/"receção", "acção"/"ação"), in a word long enough not to be another; not
#: "ct" ("contacto"/"contato"), which would make "bactérias" "baterias".
_SILENT = regex.compile(r"(?<=[aeiou])(?:p(?=[ct])|c(?=c))")


def _one_spelling(bare: str, language: str) -> str:
    """One spelling for a word written two ways: British and American ("instalment"/
    "installment", "colour"/"color"), European and Brazilian Portuguese."""
    if language == "en":
        if len(bare) >= 6 and bare.endswith("our"):
            bare = bare[:-3] + "or"
        return bare.replace("llment", "lment")  # "installment"; not "filling" "filing"
    if language == "pt" and len(bare) >= 6:
        return _SILENT.sub("", bare)
    return bare


def _single(stemmed: str) -> str:
    """A verb's stem without the last letter "-ing" and "-ed" double: "submitting" and
    "cancelled" are "submit" and "cancel" (not "planner" "plan", nor "hammer" "ham")."""
    if len(stemmed) > 3 and stemmed[-1] == stemmed[-2] and stemmed[-1].isalpha():
        return stemmed[:-1]
    return stemmed


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


def language_of(bare: list[str], plain: str) -> str | None:
    """``"pt"`` or ``"en"``, by which language's own stopwords (and, for Portuguese, words
    with its letters) a text's accent-free words and case-folded text hold more of;
    ``None`` when neither has more ("Aceitam Pix?"). The recognisers' ``language_of``
    (``providers/recognisers/language.py``) weighs a reply with lists of its own; these are
    the ones the cache's labelled set holds to its figures."""
    portuguese = sum(word in _PORTUGUESE for word in bare) + sum(
        bool(_PORTUGUESE_LETTERS & set(word)) for word in _WORDS.findall(plain)
    )
    english = sum(word in _ENGLISH for word in bare)
    if portuguese == english:
        return None
    return "pt" if portuguese > english else "en"


def negations(text: str) -> int:
    """How many negations ``text`` holds ("not", "n't", "non-", "não", and "no" in a text
    that is not Portuguese)."""
    plain = text.translate(APOSTROPHES).casefold()
    bare = [fold(word) for word in _WORDS.findall(plain.replace("'", ""))]
    count = sum(1 for word in bare if word in NEGATIONS)
    count += sum(1 for found in _NT.findall(plain) if fold(found.replace("'", "")) not in NEGATIONS)
    count += len(_NON.findall(plain))
    if "no" in bare and language_of(bare, plain) != "pt":
        count += bare.count("no")
    return count


def language(text: str) -> str | None:
    """``language_of`` a text."""
    plain = text.casefold()
    return language_of([fold(word) for word in _WORDS.findall(plain)], plain)
