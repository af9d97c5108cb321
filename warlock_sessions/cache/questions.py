"""What a question says, for the similarity step's refusals (docs/cache.md#what-it-refuses).

The similarity step serves the *same question asked again*: the same content words with
other filler words, inflections ("hour"/"hours", "cancelo"/"cancelar"), case or
punctuation, and the same *phrases* in another order ("Tonight, book a table for 2 people"
/ "Book a table for 2 people tonight"), asked after a similar assistant turn. A question is
cut into phrases where a preposition, a time word ("tonight", "amanhã"), "and" or a comma
starts one; words keep their order inside a phrase and a phrase keeps its preposition when
that preposition gives it a role ("from", "to", "than", "de", "para"). So a phrase may move,
but "Ana owes Bia" is not "Bia owes Ana", nor "from savings to checking" "from checking to
savings". Anything else is another question to it, however close the two embed: another
content word, one more or one less, other numbers (in the question or in the turn before it),
a negation more or less. Questions of fewer than three distinct content words, and questions
that point back at the conversation ("do the same for the other one"), are not looked up by
similarity at all.

English and Portuguese. Words are compared case-folded, with their accents ("avó" is not
"avô"); stopwords and negations are recognised with or without them.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import NamedTuple

import regex

from ..engine.text import fold
from ..providers.embedders import plain_words

#: The fewest distinct content words a question needs to be looked up by similarity.
MIN_CONTENT_WORDS = 2
#: The fewest a question needs to be served after another assistant turn than its own.
CONTEXT_FREE_WORDS = 3

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
    "some any all much many s d ll ve re m want wanna like mine yours guys regarding"
    # Portuguese (without accents: words are looked up so)
    " o a os as um uma uns umas e ou mas se entao de do da dos das em no na nos nas por "
    "para pra com que qual quais quem quando onde como porque por que eu me meu minha voce "
    "voces ele ela eles elas nos nosso nossa isso isto esse essa este esta aquilo ser estar "
    "e sao foi era tem ter ha pode podem poderia seria sim ok obrigado obrigada oi ola bom "
    "boa muito muita ja so tambem favor ao aos pelo pela pelos pelas num numa "
    "meus minhas teu tua teus tuas seu sua seus suas nossos nossas posso podia consigo quero "
    "queria gostaria existe existem partir faco devo deve devemos ta"
)

NEGATIONS = _words(
    "not never none nobody nothing nor neither without cannot cant dont doesnt didnt isnt "
    "arent wasnt werent wont wouldnt shouldnt couldnt hasnt havent hadnt mustnt neednt "
    "shant mightnt aint nao nunca nem sem jamais nenhum nenhuma nada ninguem"
)
#: Words that only Portuguese uses among the stopwords: a text with one reads "no" as "in
#: the" ("no restaurante"), one without as English's "no".
_PORTUGUESE = _words(
    "os uma da das dos em na nas para com que qual voce ele ela isso esse essa este "
    "esta nao sao tem pode obrigado ola tambem meu minha seu sua posso quero estou quando "
    "onde quanto quanta quantos quantas pelo pela"
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


#: People whose last vowel is who they are, not an inflection: "o meu filho" is not "a
#: minha filha" ("cancelo" and "cancelar" are one act).
PEOPLE = _words(
    "filho filha irmao irma tio tia neto neta sobrinho sobrinha primo prima amigo amiga "
    "namorado namorada aluno aluna menino menina senhor senhora medico medica enfermeiro "
    "enfermeira vizinho vizinha dono dona avo chefe moco moca rapaz rapariga"
)


def stem(word: str) -> str:
    """``word`` without its inflection, judged by its accent-free spelling (a word with no
    ending to take off keeps its accents; a person in ``PEOPLE`` keeps all but a plural's
    "s")."""
    bare = fold(word)
    if bare in PEOPLE:  # with its accents: "avó" is not "avô"
        return word
    if bare.endswith("s") and bare[:-1] in PEOPLE:
        return word[:-1]
    if bare.endswith(("ies", "ied")) and len(bare) > 6:  # "balconies", "balcony"
        return bare[:-3] + "y"
    if bare.endswith("ais") and len(bare) > 5:  # "animais", "animal"
        return bare[:-2] + "l"
    for suffix in SUFFIXES:
        if bare.endswith(suffix) and len(bare) - len(suffix) >= 4:
            stemmed = bare[: -len(suffix)]
            return _single(stemmed) if suffix in ("ing", "ed") else stemmed
    if bare.endswith("s") and not bare.endswith("ss") and len(bare) > 3:  # "bags", "pets"
        return bare[:-1]
    return word


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


def _portuguese(bare: list[str], plain: str) -> bool:
    """Whether a text's accent-free words (or its letters) are Portuguese's."""
    return any(word in _PORTUGUESE for word in bare) or bool(_PORTUGUESE_LETTERS & set(plain))


def negations(text: str) -> int:
    """How many negations ``text`` holds ("not", "n't", "non-", "não", and "no" in a text
    that is not Portuguese)."""
    plain = text.translate(_APOSTROPHES).casefold()
    bare = [fold(word) for word in _WORDS.findall(plain.replace("'", ""))]
    count = sum(1 for word in bare if word in NEGATIONS)
    count += sum(1 for found in _NT.findall(plain) if fold(found.replace("'", "")) not in NEGATIONS)
    count += len(_NON.findall(plain))
    if "no" in bare and not _portuguese(bare, plain):
        count += bare.count("no")
    return count


#: Words after which "it", "this" or "same" points at nothing said before: "how long does
#: it take", "is it possible", "this morning", "at the same time".
_POINTS_AT_NOTHING = _words("cost costs take takes possible necessary required ok okay")
_SAME = _words("time day hora tempo dia")


def refers_back(text: str) -> bool:
    """Whether ``text`` points back at the conversation ("cancel it", "does that cost
    extra"; not "this morning", "at the same time", "how much does it cost")."""
    bare = [fold(word) for word in words(text)]
    following = [*bare[1:], ""]
    return any(
        word in REFERS_BACK and not _points_at_nothing(word, then)
        for word, then in zip(bare, following, strict=True)
    )


def _points_at_nothing(word: str, following: str) -> bool:
    if word == "it":
        return following in _POINTS_AT_NOTHING
    return following in TIME_WORDS or (word in ("same", "mesmo", "mesma") and following in _SAME)


def too_short(text: str) -> bool:
    return len(content_words(text)) < MIN_CONTENT_WORDS


def unaskable(question: str) -> str | None:
    """Why ``question`` is not looked up by similarity at all (``short-question``,
    ``refers-back``), whatever it is compared with, or ``None``."""
    if too_short(question):
        return "short-question"
    if refers_back(question):
        return "refers-back"
    return None


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
    "Monday"), ``qualifier`` (the words of one and more: "check-in"/"check-out", "the
    pool"/"the outdoor pool"), ``opposite`` (a word and its prefixed opposite), or
    ``None``."""
    ours, theirs = set(question), set(candidate)
    if ours == theirs:
        return None if question == candidate else "order"
    if ours < theirs or theirs < ours:
        return "qualifier"
    only_ours, only_theirs = ours - theirs, theirs - ours
    if len(only_ours) == 1 and len(only_theirs) == 1:
        return "substitution"
    stems = {_unprefixed(word) for word in only_ours}
    if any(_unprefixed(word) in stems for word in only_theirs):
        return "opposite"
    return None


#: Prepositions that give the phrase they start a role, as one name per role. A role in
#: ``STRICT_ROLES`` must be the same on both questions ("flights from Lisbon" is not "flights
#: to Lisbon"); another must be where both have it ("swap Tuesday for Thursday" is not "swap
#: Thursday for Tuesday"), and a word may not have two ("voos de Lisboa"/"voos para
#: Lisboa"), but one question may have it where the other has none ("a discount for
#: tickets"/"a discount on tickets", "how to add"/"how do I add").
def _roles_of(**roles: str) -> dict[str, str]:
    """``role="word word"`` as {word: role}."""
    return {word: role for role, spelt in roles.items() for word in spelt.split()}


ROLES = {
    "en": _roles_of(
        **{"from": "from since", "to": "to into", "for": "for", "than": "than"},
        before="before", after="after", until="until", over="over above", under="under below",
    ),
    "pt": _roles_of(
        de="de da do dos das", por="por pelo pela pelos pelas", para="para pra ao aos",
        **{"from": "desde"},
        before="antes", after="depois apos", until="ate", over="acima", under="abaixo",
    ),
}  # fmt: skip
STRICT_ROLES = frozenset({"from", "than", "before", "after", "until", "over", "under"})
#: Words that start a clause, so end the phrase before them: "From the dashboard | how can I
#: export my data", "Na pizzaria | tem opção sem glúten".
CLAUSE_WORDS = {
    "en": _words(
        "how what when where which who whom whose why can could would should will shall may "
        "might must do does did is are was were am have has had i you we they he she"
    ),
    "pt": _words(
        "como que qual quais quando onde quem posso pode podem podemos consigo quero queria "
        "devo preciso tenho vou tem tens temos ha e sao esta estao eu voce voces nos ele ela "
        "eles elas fazem faz"
    ),
}
#: Prepositions of one meaning, as one word ("no", "na" and "num" are "em": "in").
_PLACE_OF = {word: "em" for word in ("no", "na", "nos", "nas", "num", "numa")} | {"as": "a"}
#: Words that start a phrase, which may move ("at the front desk", "pelo cartão"), by language.
#: One without a role is a word of its phrase too: "inside the hotel" is not "outside".
PREPOSITIONS = {
    "en": _words(
        "from since than to into onto for with by at in on of about via per during before after "
        "until toward towards within inside outside through near around across under over above "
        "below"
    ),
    "pt": _words(
        "de da do dos das desde para pra ao aos em no na nos nas num numa com por pelo pela pelos "
        "pelas ate sobre entre apos antes depois durante acima abaixo"
    ),
}
#: Who a question is about, one name per person ("nos", "se" and "seu" are left out: each is
#: also something else): "Can I send my ticket to my friend?" is not "Can my friend send
#: his ticket to me?".
PERSONS = {
    **dict.fromkeys(
        _words(
            "i me my mine myself eu mim meu minha meus minhas comigo posso podia poderia consigo "
            "quero queria gostaria devo preciso tenho vou"
        ),
        "me",
    ),
    **dict.fromkeys(_words("you your yours yourself voce voces te ti teu tua contigo"), "you"),
    **dict.fromkeys(_words("we us our ours nosso nossa nossos nossas"), "we"),
    **dict.fromkeys(
        _words("he him his she her they them their ele ela eles elas dele dela deles delas lhe"),
        "they",
    ),
}
#: Times of day and days, each a phrase of its own ("tonight", "amanhã", "à noite", "last
#: week").
TIME_WORDS = _words(
    "today tonight tomorrow yesterday now later soon asap morning afternoon evening night "
    "weekend weekends week month year last next monday tuesday wednesday thursday friday "
    "saturday sunday online offline abroad hoje amanha ontem agora logo cedo manha tarde "
    "noite semana mes ano proximo proxima passado passada segunda terca quarta quinta sexta "
    "sabado domingo"
)
#: Words and marks that end a phrase and start one that may move: "2 adults and 3
#: children", "Ana or Bia", "if the train is cancelled", a comma.
JOINERS = _words("and or if because while please e ou se porque enquanto , ; ! ?")
#: The most phrases a reordering is searched through (a longer text must keep its order).
MAX_PHRASES = 12
#: The most words a reordering is searched through.
MAX_WORDS_MOVED = 64

_TOKENS = regex.compile(r"\d+(?:[.,:/-]\d+)*|[\p{L}\p{N}]+|[,;!?]")
_CONTRACTIONS = (("can't", "can not"), ("won't", "will not"), ("shan't", "shall not"))
_NOT = regex.compile(r"n't\b")
_POR_FAVOR = regex.compile(r"\bpor favor\b", regex.IGNORECASE)  # "please", not "by favour"


class Phrase(NamedTuple):
    """Words of a question that go together: stemmed content words, numbers (``#2``) and
    negations (``not``), in order; the ``role`` its preposition gives it ("" for none); and
    whether it may move, as a phrase that a preposition, a time word, "and" or a comma
    starts may ("tonight", "at the front desk"), and a subject or object may not."""

    role: str
    words: tuple[str, ...]
    movable: bool


class Reading(NamedTuple):
    """What the refusals read of a question: its phrases, with the persons it names among
    their words (``@me``: where a phrase first names each), and those persons."""

    phrases: list[Phrase]
    persons: frozenset[str]

    def without_persons(self) -> list[Phrase]:
        return [
            phrase._replace(words=kept)
            for phrase in self.phrases
            if (kept := tuple(word for word in phrase.words if not word.startswith("@")))
        ]


class _Cutter:
    """Cuts one text into phrases, word by word."""

    def __init__(self, language: str) -> None:
        self.roles, self.prepositions = ROLES[language], PREPOSITIONS[language]
        self.clause_words, self.language = CLAUSE_WORDS[language], language
        self.cut: list[Phrase] = []
        self.persons: list[str] = []
        self.role, self.movable, self.words = "", False, list[str]()

    def close(self, role: str = "", movable: bool = False, *, clause: bool = False) -> None:
        """Ends the phrase, unless it has no words yet ("if I travel", "pela de quinta": a
        phrase of "por", not "de"), or, at a ``clause`` word, none but persons ("eu posso
        ver"; but "from me | to my husband")."""
        if not self.words or (clause and all(word.startswith("@") for word in self.words)):
            self.role, self.movable = self.role or role, movable or self.movable
            return
        self.cut.append(Phrase(self.role, tuple(self.words), self.movable))
        self.role, self.movable, self.words = role, movable, []

    def name(self, person: str) -> None:
        if f"@{person}" not in self.words:  # "I ... my booking" names one person
            self.words.append(f"@{person}")
        self.persons.append(person)

    def add(self, token: str, folded: str, written: str) -> None:
        if written.isupper() and len(written) > 1:  # a name in capitals ("NOS", "IT")
            self.words.append(folded)
        elif token[0].isdigit() or folded in NUMBER_WORDS:
            self.words.append(f"#{NUMBER_WORDS.get(folded, token)}")
        elif self._cuts(token, folded):
            pass
        elif (folded == "no" and self.language == "en") or folded in NEGATIONS:
            self.words.append("not")
        elif folded in PERSONS:
            self.name(PERSONS[folded])
        elif folded not in STOPWORDS:
            self.words.append(stem(token))

    def _cuts(self, token: str, folded: str) -> bool:
        """Ends the phrase where ``token`` does (and starts the next); whether it does."""
        if token in JOINERS:  # by its accents: Portuguese's "e" is "and", "é" is "is"
            self.close(movable=True)
        elif folded in ("without", "sem"):  # a negation that starts a phrase
            self.close(movable=True)
            self.words.append("not")
        elif token == "dá":  # "dá para": "can one"; "da" is "of the"
            pass
        elif folded in self.prepositions or token in ("à", "às"):
            self.close(self.roles.get(folded, ""), movable=True)
            if folded not in self.roles and folded not in ("to", "para", "pra"):
                self.words.append(f"~{_PLACE_OF.get(folded, folded)}")
        elif folded in self.clause_words:
            self.close(clause=True)
            if folded in PERSONS:  # "I", "you", "eu", "posso": a clause's subject
                self.name(PERSONS[folded])
        elif folded in TIME_WORDS:
            self.close(movable=True)
            self.words.append(folded)
            self.close(movable=True)
        else:
            return False
        return True


def read(text: str) -> Reading:
    """``text`` cut into its phrases (``Phrase``), and the persons it names."""
    written = unicodedata.normalize("NFC", text.translate(_APOSTROPHES))
    written = _POR_FAVOR.sub(",", written)
    for contracted, spelt in _CONTRACTIONS:
        written = regex.sub(contracted, spelt, written, flags=regex.IGNORECASE)
    as_written = _TOKENS.findall(_NOT.sub(" not", written))
    found = [token.casefold() for token in as_written]
    bare = [fold(token) for token in found]
    cutter = _Cutter("pt" if _portuguese(bare, written.casefold()) else "en")
    for token, folded, original in zip(found, bare, as_written, strict=True):
        cutter.add(token, folded, original)
    cutter.close()
    return Reading(cutter.cut, frozenset(cutter.persons))


def moved(pieces: list[Phrase], target: list[Phrase]) -> bool:
    """Whether ``pieces``' words, as they are or with one run of phrases that may move
    moved elsewhere, make ``target``'s, the run landing where a phrase of ``target`` that
    may move starts ("book a table for 2 people | tonight" / "tonight | book a table for 2
    people"; not "my wife | can add me" / "can I add | my wife", nor "the groomer | can
    call me" / "can I call | the groomer")."""
    sequence = _sequence(target)
    if _sequence(pieces) == sequence:
        return True
    if len(pieces) > MAX_PHRASES or len(sequence) > MAX_WORDS_MOVED:
        return False
    landings, offset = set(), 0
    for phrase in target:
        if phrase.movable:
            landings.add(offset)
        offset += len(phrase.words)
    for start in range(len(pieces)):
        for end in range(start + 1, len(pieces) + 1):
            if not pieces[start].movable:
                break
            run, rest = pieces[start:end], pieces[:start] + pieces[end:]
            for at in range(len(rest) + 1):
                if (
                    len(_sequence(rest[:at])) in landings
                    and _sequence(rest[:at] + run + rest[at:]) == sequence
                ):
                    return True
    return False


def _same_roles(ours: list[Phrase], theirs: list[Phrase]) -> bool:
    """Whether two questions' phrases have the same roles (``ROLES``): a strict role's
    phrases are the same, another's where both have it, and no word has two roles."""
    for role in {phrase.role for phrase in ours + theirs if phrase.role}:
        our_own = Counter(phrase.words for phrase in ours if phrase.role == role)
        their_own = Counter(phrase.words for phrase in theirs if phrase.role == role)
        if (role in STRICT_ROLES or (our_own and their_own)) and our_own != their_own:
            return False
    our_roles = _role_of_each_word(ours)
    return all(
        our_roles.get(word, role) == role for word, role in _role_of_each_word(theirs).items()
    )


def _role_of_each_word(cut: list[Phrase]) -> dict[str, str]:
    return {word: phrase.role for phrase in cut if phrase.role for word in phrase.words}


def _sequence(cut: list[Phrase]) -> tuple[str, ...]:
    return tuple(word for phrase in cut for word in phrase.words)


def reordered(question: str, candidate: str) -> str | None:
    """Between two questions: ``None`` if they are one question (the same words and
    persons, the same roles, at most one run of phrases moved), ``order`` if they have the
    same words otherwise ("Ana owes Bia"/"Bia owes Ana", "my wife ... to me"/"I ... to my
    wife"), ``wording`` if not the same words. Persons count only where both name some
    ("How do I add"/"how to add")."""
    ours, theirs = read(question), read(candidate)
    if ours.persons and theirs.persons:
        our_phrases, their_phrases = ours.phrases, theirs.phrases
    else:
        our_phrases, their_phrases = ours.without_persons(), theirs.without_persons()
    our_words, their_words = _sequence(our_phrases), _sequence(their_phrases)
    if Counter(our_words) != Counter(their_words):
        return "wording"
    if _same_roles(our_phrases, their_phrases) and (
        moved(our_phrases, their_phrases) or moved(their_phrases, our_phrases)
    ):
        return None
    return "order"


def mismatch(
    question: str,
    candidate: str,
    context: str = "",
    asked_after: str = "",
    *,
    paraphrases: bool = False,
) -> str | None:
    """Why ``candidate`` (asked after ``asked_after``) cannot answer ``question`` (asked
    after ``context``), however close they embed, or ``None``. By default only the same
    question passes, reworded or with its phrases moved (``reordered``); with
    ``paraphrases`` other words may differ too, except by order, by one word swapped, or
    by an opposite. A question of fewer than ``CONTEXT_FREE_WORDS`` content words ("Do I
    need an appointment?") passes only after the same assistant turn."""
    if sorted(numbers(question)) != sorted(numbers(candidate)):
        return "numbers"
    if numbers(context) != numbers(asked_after):
        return "context-numbers"
    if len(content_words(question)) < CONTEXT_FREE_WORDS and words(context) != words(asked_after):
        return "context"
    if negations(question) % 2 != negations(candidate) % 2:
        return "negation"
    why = reordered(question, candidate)
    if why != "wording" or not paraphrases:
        return why
    if numbers(question) != numbers(candidate):  # no phrase says what each number counts
        return "numbers"
    return reworded(content_words(question), content_words(candidate))


__all__ = [
    "content_words",
    "mismatch",
    "negations",
    "numbers",
    "plain_words",
    "read",
    "refers_back",
    "too_short",
    "unaskable",
]
