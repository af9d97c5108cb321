"""What a question says, for the similarity step's refusals (docs/cache.md#what-it-refuses).

The similarity step serves the *same question asked again*: the same content words with
other filler words, inflections ("hour"/"hours", "cancelo"/"cancelar"), case or
punctuation, and the same *phrases* in another order ("Tonight, book a table for 2 people"
/ "Book a table for 2 people tonight"), asked after a similar assistant turn. A question is
cut into phrases where a preposition, a time word ("tonight", "amanhã"), "and", "when" that
does not ask, or a comma starts one, and where an article or a possessive starts a subject
after such a phrase; words keep their order inside a phrase and a phrase keeps its
preposition when that preposition gives it a role ("from", "to", "than", "de", "para"), and
its question word what it asks for ("where", "when", "who", "why"). So a phrase may move,
but "Ana owes Bia" is not "Bia owes Ana", nor "from savings to checking" "from checking to
savings". Anything else is another question to it, however close the two embed: another
content word, one more or one less, other numbers (in the question or in the turn before it),
a negation more or less. Questions of fewer than two distinct content words, and questions
that point back at the conversation ("do the same for the other one"), are not looked up by
similarity at all.

English and Portuguese, each question read in its own language. What a word is (its
inflections, its spellings, case and accents) is ``words.py``'s; how capitals read (a
shout, a name) and a word written in parts are read here, beside the other question.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import NamedTuple

import regex

from ..engine.text import fold
from ..providers.embedders import plain_words
from ..providers.text import word_set
from .words import (
    APOSTROPHES,
    NEGATIONS,
    NUMBER_WORDS,
    STOPWORDS,
    content_words,
    language,
    language_of,
    negations,
    numbers,
    stem,
    words,
)

#: The fewest distinct content words a question needs to be looked up by similarity.
MIN_CONTENT_WORDS = 2
#: The fewest a question needs to be served after another assistant turn than its own.
CONTEXT_FREE_WORDS = 3

#: Words that point back at the conversation: a question with one means something else
#: after another turn, so it is not looked up by similarity.
REFERS_BACK = word_set(
    "it its this that these those them they one ones same other another former latter "
    "above previous isso isto esse essa esses essas aquele aquela aquilo ele ela eles elas "
    "mesmo mesma outro outra outros outras anterior"
)


#: Words after which "it", "this" or "same" points at nothing said before: "how long does
#: it take", "is it possible", "this morning", "at the same time".
_POINTS_AT_NOTHING = word_set(
    "cost costs take takes possible necessary required ok okay rain rains raining snow snows "
    "snowing"
)
_SAME = word_set("time day hora tempo dia")


def refers_back(text: str) -> bool:
    """Whether ``text`` points back at the conversation ("cancel it", "does that cost
    extra"; not "this morning", "at the same time", "how much does it cost")."""
    bare = [fold(word) for word in words(text)]
    following, previous = [*bare[1:], ""], ["", *bare[:-1]]
    return any(
        word in REFERS_BACK and not _points_at_nothing(word, then, before)
        for word, then, before in zip(bare, following, previous, strict=True)
    )


def _points_at_nothing(word: str, following: str, previous: str) -> bool:
    if word == "that" and previous == "so":  # "so that": a purpose, not a thing
        return True
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
#: English verbs that ask after a question word ("when does", "when will").
AUXILIARIES = word_set(
    "do does did is are was were will would can could should shall may might must has have had"
)
CLAUSE_WORDS = {
    "en": word_set("how what when where which who whom whose why am i you we they he she")
    | AUXILIARIES,
    "pt": word_set(
        "como que qual quais quando onde quem quanto quanta quantos quantas posso pode podem "
        "podemos consigo quero queria "
        "devo preciso tenho vou tem tens temos ha e sao esta estao eu voce voces nos ele ela "
        "eles elas fazem faz"
    ),
}
#: Prepositions of one meaning, as one word ("no", "na" and "num" are "em": "in").
_PLACE_OF = {word: "em" for word in ("no", "na", "nos", "nas", "num", "numa")} | {"as": "a"}
#: Words that start a phrase, which may move ("at the front desk", "pelo cartão"), by language.
#: One without a role is a word of its phrase too: "inside the hotel" is not "outside".
PREPOSITIONS = {
    "en": word_set(
        "from since than to into onto for with by at in on of about via per during before after "
        "until toward towards within inside outside through near around across under over above "
        "below"
    ),
    "pt": word_set(
        "de da do dos das desde para pra ao aos em no na nos nas num numa com por pelo pela pelos "
        "pelas ate sobre entre apos antes depois durante acima abaixo"
    ),
}
#: Words that start a noun phrase: after a phrase that a preposition or a time word started
#: has its words, one starts the next ("for the guests | the parking", "após 10 dias | a
#: minha encomenda").
DETERMINERS = {
    "en": word_set("the a an my your his her our their"),
    "pt": word_set(
        "o a os as um uma uns umas meu minha meus minhas teu tua teus tuas seu sua seus suas "
        "nosso nossa nossos nossas"
    ),
}
#: Who a question is about, one name per person ("nos", "se" and "seu" are left out: each is
#: also something else): "Can I send my ticket to my friend?" is not "Can my friend send
#: his ticket to me?".
PERSONS = {
    **dict.fromkeys(
        word_set(
            "i me my mine myself eu mim meu minha meus minhas comigo posso podia poderia consigo "
            "quero queria gostaria devo preciso tenho vou"
        ),
        "me",
    ),
    **dict.fromkeys(
        word_set("you your yours yourself voce voces vc vcs te ti teu tua contigo"), "you"
    ),
    **dict.fromkeys(word_set("we us our ours nosso nossa nossos nossas"), "we"),
    **dict.fromkeys(
        word_set("he him his she her they them their ele ela eles elas dele dela deles delas lhe"),
        "they",
    ),
}
#: Times of day and days, each a phrase of its own ("tonight", "amanhã", "à noite", "last
#: week").
TIME_WORDS = word_set(
    "today tonight tomorrow yesterday now later soon asap morning afternoon evening night "
    "weekend weekends week month year last next monday tuesday wednesday thursday friday "
    "saturday sunday online offline abroad hoje amanha ontem agora logo cedo manha tarde "
    "noite semana mes ano proximo proxima passado passada segunda terca quarta quinta sexta "
    "sabado domingo"
)
#: What a question word asks for, where it asks one: "Where is the checkout?" is not "When
#: is the checkout?" ("what", "which", "how" and their Portuguese ask no one thing).
ASKS = {
    **dict.fromkeys(("who", "whom", "quem"), "who"),
    **dict.fromkeys(("where", "onde"), "where"),
    **dict.fromkeys(("when", "quando"), "when"),
    **dict.fromkeys(("why",), "why"),
}
#: Words that ask, but "when": beside one, "when" starts a clause ("When it rains, who do
#: I call?").
QUESTION_WORDS = word_set(
    "what which who whom whose where why how qual quais quem onde porque como quanto quanta "
    "quantos quantas"
)
#: Words that start a clause that may move when they do not ask the question: "Who do I
#: call | when the boiler stops?", "When the boiler stops, | who do I call?" (but "When does
#: the pool open?").
SUBORDINATORS = word_set("when quando")
#: Words and marks that end a phrase and start one that may move: "2 adults and 3
#: children", "Ana or Bia", "if the train is cancelled", a comma.
JOINERS = word_set("and or if because while please e ou se porque enquanto , ; ! ?")
#: The most phrases a reordering is searched through (a longer text must keep its order).
MAX_PHRASES = 12
#: The most words a reordering is searched through.
MAX_WORDS_MOVED = 64

_TOKENS = regex.compile(r"\d+(?:[.,:/-]\d+)*|[\p{L}\p{N}]+|[,;!?]")
_CONTRACTIONS = (("can't", "can not"), ("won't", "will not"), ("shan't", "shall not"))
_NOT = regex.compile(r"n't\b")
_POR_FAVOR = regex.compile(r"\bpor favor\b", regex.IGNORECASE)  # "please", not "by favour"
_HYPHENATED = regex.compile(r"\b(?!re-)\p{L}+(?:-\p{L}+)+", regex.IGNORECASE)  # not "re-sign"
_TWO_WORDS = regex.compile(r"\b(\p{L}+) (?=(\p{L}+)\b)")
_SENTENCE_END = regex.compile(r"[.!?:]\s*|^\W+")
#: "for" and a verb's "-ing" with its object: a purpose, as "to" and the verb ("the deadline
#: for submitting the form" / "the deadline to submit the form"; not "for cooking classes").
_FOR_DOING = regex.compile(
    r"\bfor (\p{L}{3,}ing)(?=\s+(?:the|a|an|my|your|our|their|his|her)\b)",
    regex.IGNORECASE,
)
_INTO = regex.compile(r"\b(in|on)to\b", regex.IGNORECASE)  # "log into" is "log in to"


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
        self.determiners = DETERMINERS[language]
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

    def _fronted(self) -> bool:
        """Whether only phrases that may move come before (a question word here asks)."""
        return all(phrase.movable for phrase in self.cut) and (self.movable or not self.words)

    def _after_its_noun(self) -> bool:
        """Whether the phrase is a preposition's and has words of its own yet (not only
        persons and the preposition)."""
        # Not after "to": "to get | a new aid" is one verb and its object.
        started = self.role not in ("", "to") or any(word[0] == "~" for word in self.words)
        return started and any(word[0] not in "@~" for word in self.words)

    def name(self, person: str) -> None:
        if f"@{person}" not in self.words:  # "I ... my booking" names one person
            self.words.append(f"@{person}")
        self.persons.append(person)

    def add(self, token: str, folded: str, written: str, reading: str = "") -> None:
        """``reading``: how the token reads in its text (``_readings``): ``shouted``,
        ``named``, ``subordinate``, or ``""``."""
        if written.isupper() and len(written) > 1 and not reading:  # a name: "NOS", "IT"
            self.words.append(folded)
        elif token[0].isdigit() or folded in NUMBER_WORDS:
            self.words.append(f"#{NUMBER_WORDS.get(folded, token)}")
        elif not (self._cuts(token, folded) or self._starts_clause(folded, reading)):
            self._word(token, folded, reading)

    def _word(self, token: str, folded: str, reading: str) -> None:
        """A word that cuts nothing: a person, a negation, a name or a content word (a
        determiner after its noun ends a preposition's phrase)."""
        if folded in self.determiners and self._after_its_noun():
            self.close()  # a noun phrase after the moving one: a subject or an object
        if (folded == "no" and self.language == "en") or folded in NEGATIONS:
            self.words.append("not")
        elif folded in PERSONS:
            self.name(PERSONS[folded])
        elif reading == "named":
            self.words.append(f"^{folded}")
        elif folded not in STOPWORDS:
            self.words.append(stem(token, self.language))

    def _cuts(self, token: str, folded: str) -> bool:
        """Ends the phrase where ``token`` does (and starts the next, which may move);
        whether it does."""
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
        else:
            return False
        return True

    def _starts_clause(self, folded: str, reading: str) -> bool:
        """Ends the phrase where a clause or a time phrase starts; whether one does."""
        if folded in SUBORDINATORS and (reading == "subordinate" or not self._fronted()):
            self.close(movable=True)
        elif folded in self.clause_words:
            if not self.cut and self.words in (["~at"], ["~em"]):
                self.words = []  # "at what time" asks "what time"
            self.close(clause=True)
            if folded in PERSONS:  # "I", "you", "eu", "posso": a clause's subject
                self.name(PERSONS[folded])
            elif folded in ASKS and f"?{ASKS[folded]}" not in self.words:
                self.words.append(f"?{ASKS[folded]}")
        elif folded in TIME_WORDS or (folded[-1:] == "s" and folded[:-1] in TIME_WORDS):
            self.close(movable=True)  # "on Sundays" is "on Sunday" ("aos sábados")
            self.words.append(folded if folded in TIME_WORDS else folded[:-1])
            self.close(movable=True)
        else:
            return False
        return True


def _compounds_as(text: str, theirs: frozenset[str]) -> str:
    """``text`` with a word written in parts as one where the other question has it as one
    word (``theirs``: its words, folded):
    hyphenated ("check-out"/"checkout", "Wi-Fi"/"wifi"; but "two-factor"/"two factor" and
    "e-books"/"e-book" stay two words) or two content words ("home banking"/"homebanking",
    "camp site"/"campsite"; not "a part"/"apart")."""

    def hyphenated(found: regex.Match[str]) -> str:
        one = found.group().replace("-", "")
        return one if fold(one) in theirs else found.group()

    def spaced(found: regex.Match[str]) -> str:
        first, second = fold(found.group(1)), fold(found.group(2))
        if first in STOPWORDS or second in STOPWORDS or first + second not in theirs:
            return found.group()
        return found.group(1)  # the space goes; the second word, only looked at, stays

    return _TWO_WORDS.sub(spaced, _HYPHENATED.sub(hyphenated, text))


def read(text: str, beside: str = "") -> Reading:
    """``text`` cut into its phrases (``Phrase``), and the persons it names; read beside the
    question it is compared with: in that one's language where ``text`` has no stopwords of
    either, its words written in parts and its capitals as ``beside`` has them."""
    theirs = frozenset(fold(word) for word in words(beside))
    written = unicodedata.normalize("NFC", _compounds_as(text, theirs).translate(APOSTROPHES))
    written = _POR_FAVOR.sub(" please ", written)
    for contracted, spelt in _CONTRACTIONS:
        written = regex.sub(contracted, spelt, written, flags=regex.IGNORECASE)
    written = _INTO.sub(r"\1 to", _FOR_DOING.sub(r"to \1", written))
    spaced = _NOT.sub(" not", written)
    as_written = _TOKENS.findall(spaced)
    found = [token.casefold() for token in as_written]
    bare = [fold(token) for token in found]
    # Its own words decide; one that has none of either ("Aceitam Pix?") reads as the other.
    cutter = _Cutter(language_of(bare, written.casefold()) or language(beside) or "en")
    readings = _readings(spaced, as_written, beside, theirs)
    for index in _subordinate(bare, cutter.language):
        readings[index] = "subordinate"
    for token, folded, original, reading in zip(found, bare, as_written, readings, strict=True):
        cutter.add(token, folded, original, reading)
    cutter.close()
    return Reading(cutter.cut, frozenset(cutter.persons))


#: How many words in capitals in a row are shouted rather than names ("IF I MISS MY LESSON",
#: "NO PERÍODO DA TARDE"; not "the NOS shop", "BBC NEWS").
SHOUTED_RUN = 3


def _subordinate(bare: list[str], language: str) -> list[int]:
    """Where "when" or "quando" starts a clause rather than asks: beside another question
    word ("When the boiler stops, who do I call?"), as the first word of a text that a comma
    cuts ("Quando a luz faltar, para que número ligo?"), or in English before anything but
    a verb that asks ("when I arrive", "when renewing"; not "when does", "when will")."""
    found = [index for index, word in enumerate(bare) if word in SUBORDINATORS]
    if any(word in QUESTION_WORDS for word in bare):
        return found
    following = [*bare[1:], ""]
    return [
        index
        for index in found
        if (index == 0 and any(word in (",", ";") for word in bare))
        or (language == "en" and following[index] not in AUXILIARIES)
    ]


def _readings(text: str, tokens: list[str], beside: str, theirs: frozenset[str]) -> list[str]:
    """Each token's case (``_Cutter.add``): ``shouted`` (``_shouted``), or ``named``: a
    capitalised word within a sentence of a text that is not shouted, where ``beside``
    writes capitals too (case says nothing of a question typed all in lower case)."""
    cases = _shouted(tokens, theirs)
    if not any(letter.isupper() for letter in beside) or "shouted" in cases:
        return cases
    starts = {0} | {found.end() for found in _SENTENCE_END.finditer(text)}
    at = 0
    for index, token in enumerate(tokens):
        at = text.index(token, at)
        if token[0].isupper() and not token.isupper() and at not in starts:
            cases[index] = "named"
        at += len(token)
    return cases


def _shouted(tokens: list[str], theirs: frozenset[str]) -> list[str]:
    """``shouted`` for each token in a run of ``SHOUTED_RUN`` words or more written in
    capitals, one of them of four letters or more (numbers neither break nor make a run; a
    comma does: "US, UK, EU" and "NOS TV HD" are names), but a word of three letters or
    fewer only where the other question has it too (``theirs``: its words, folded; "THE US
    EMBASSY" beside "the embassy": "US" is a name); ``""`` for the others."""
    cases = [""] * len(tokens)
    run: list[int] = []
    for index, token in enumerate([*tokens, "end"]):
        if token[0].isdigit():
            continue
        if token.isupper():
            run.append(index)
            continue
        if len(run) >= SHOUTED_RUN and any(len(tokens[word]) >= 4 for word in run):
            for word in run:
                if len(tokens[word]) > 3 or fold(tokens[word]) in theirs:
                    cases[word] = "shouted"
        run = []
    return cases


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
    ours, theirs = read(question, candidate), read(candidate, question)
    if ours.persons and theirs.persons:
        our_phrases, their_phrases = ours.phrases, theirs.phrases
    else:
        our_phrases, their_phrases = ours.without_persons(), theirs.without_persons()
    our_words, their_words = _sequence(our_phrases), _sequence(their_phrases)
    if Counter(our_words) != Counter(their_words):
        return "wording"
    if _same_roles(our_phrases, their_phrases) and (
        moved(our_phrases, their_phrases)
        or moved(their_phrases, our_phrases)
        or _moved_by_roles(our_phrases, their_phrases)
    ):
        return None
    return "order"


def _moved_by_roles(ours: list[Phrase], theirs: list[Phrase]) -> bool:
    """Whether the two are one question once the phrases their prepositions give a role are
    set aside, each role once on each side with the same words ("flights to Paris on Monday
    from Porto" / "flights from Porto on Monday to Paris"), the rest with at most one run
    moved."""
    our_roles = [(phrase.role, phrase.words) for phrase in ours if phrase.role]
    their_roles = [(phrase.role, phrase.words) for phrase in theirs if phrase.role]
    distinct = len({role for role, _ in our_roles}) == len(our_roles)
    if not our_roles or not distinct or Counter(our_roles) != Counter(their_roles):
        return False
    our_rest = [phrase for phrase in ours if not phrase.role]
    their_rest = [phrase for phrase in theirs if not phrase.role]
    return moved(our_rest, their_rest) or moved(their_rest, our_rest)


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
