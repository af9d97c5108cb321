"""A person's name: the words after a cue ("my name is", "call me", "me chamo", "chamo-me"),
wherever it comes in the message, else a short answer that looks like a name. Never the
words of a refusal or of filler ("I'd rather not say", "stop", a bare "my name is")."""

from __future__ import annotations

import re

from ..text import fold, squeezed, word_set
from .language import ENGLISH, PORTUGUESE

#: Cues that may come anywhere in a clause ("I want to book, my name is Ana").
CUES = [
    "my name is", "my name's", "my names", "name's", "name is", "call me", "you can call me",
    "put it under", "under the name", "in the name of", "booking is for", "it's under",
    "meu nome e", "o meu nome e", "me chamo", "eu me chamo", "chamo-me", "chamo me",
    "me chamam de", "pode me chamar de", "podes chamar-me", "no nome de", "no nome da",
    "no nome do", "em nome de", "em nome da", "em nome do", "pode por", "pode colocar",
    "coloca", "poe",
]  # fmt: skip
#: Cues after the name, at the end of a clause ("Kevin here", "Diogo aqui").
CLOSING_CUES = ["here", "speaking", "aqui", "falando"]
#: Short cues only at the start of a clause ("it's Maria", "sou a Mariana", "é a Beatriz").
OPENING_CUES = [
    "i am", "i'm", "im", "it's", "its", "this is", "here's", "it is",
    "sou o", "sou a", "sou", "eu sou o", "eu sou a", "eu sou", "aqui e o", "aqui e a",
    "aqui e", "e o", "e a", "e", "nome", "name", "o nome",
]  # fmt: skip
#: Words no name is made of: greetings, answers, requests, refusals, filler.
NOT_NAMES = word_set(
    """
    a an the i me my you your it its this that is are am be do don't dont not no yes yeah yep
    ok okay sure hi hello hey thanks thank please stop skip idk what why who how none nobody
    nothing rather say tell telling know think business need want book booking appointment name
    here there just well hmm oh um anonymous secret later never mind private pass nope maybe
    sorry help cancel again o os as um uma eu meu minha nome sim nao oi ola obrigado obrigada
    por favor pare parar pular prefiro dizer quero marcar agendar sei la que pra para voce
    saber porque nenhum ninguem nada depois talvez desculpe ajuda cancelar segredo tchau bom
    dia boa tarde noite dunno nah good fine great cool nevermind whatever aqui here speaking
    falando hm hmm hum humm uh um er eh ah pula pule essa esse este esta isto aquilo ai
    human so very really excited happy glad ready free available busy late early back new done
    going looking coming tired interested person robot bot customer client student cliente
    pessoa humano humana feliz pronto pronta livre atrasado atrasada ocupado ocupada
    """
) | ((ENGLISH | PORTUGUESE) - frozenset(["da", "de", "do", "das", "dos", "e"]))
#: A clause beside a name that says nothing more ("Hi, Ana", "Rita Sousa, obrigada").
GREETINGS = word_set(
    """hi hello hey oi ola sure ok yes sim thanks obrigado obrigada valeu please cheers"""
)
#: Joining words inside a name ("Maria da Silva"), kept in lower case.
PARTICLES = frozenset(["da", "de", "do", "das", "dos", "e", "van", "von", "del", "di"])
MAX_NAME_WORDS = 4

_CLAUSES = re.compile(r"[.,;!?()\n]+")
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*", re.UNICODE)


def name(text: str) -> str | None:
    """The name the text gives, each word capitalised; ``None`` when it gives none."""
    if any(char.isdigit() or char == "@" for char in text) or text.rstrip().endswith("?"):
        return None  # a question back ("e aí?", "why?") is not a name
    clauses = [clause for clause in _CLAUSES.split(text) if clause.strip()]
    for clause in reversed(clauses):
        cued = _cued_name(_WORD.findall(clause))
        if cued is not None:
            return cued or None
    if len(clauses) == 1:
        return _as_name(_WORD.findall(clauses[0]), cued=False)
    if len(clauses) == 2 and _is_greeting(clauses[0]):
        return _as_name(_WORD.findall(clauses[1]), cued=False)
    if len(clauses) == 2 and _is_greeting(clauses[1]):  # "Rita Sousa, obrigada"
        return _as_name(_WORD.findall(clauses[0]), cued=False)
    return None


def introduced_name(text: str) -> str | None:
    """The name a cue introduces ("I'd like to book, my name is Laura Chen"), in text that was
    not an answer to the name's question: without a cue, words are not taken for a name."""
    if any(char.isdigit() or char == "@" for char in text):
        return None
    for clause in reversed([clause for clause in _CLAUSES.split(text) if clause.strip()]):
        cued = _cued_name(_WORD.findall(clause))
        if cued is not None:
            return cued or None
    return None


def _cued_name(words: list[str]) -> str | None:
    """The name a cue in this clause introduces ("" when the cue introduces no name), or
    ``None`` when the clause has no cue."""
    folded = [fold(word).replace("\u2019", "'") for word in words]
    after = _after_cue(folded)
    closing = len(folded) > 1 and folded[-1] in CLOSING_CUES
    if after is not None:
        end = len(words) - 1 if closing and len(folded) > after + 1 else None
        return _as_name(words[after:end], cued=True) or ""
    if closing:
        return _as_name(words[:-1], cued=True) or ""
    return None


def _after_cue(folded: list[str]) -> int | None:
    """Where the words after a cue start (the last cue of the clause), if it has one."""
    found = None
    for cue in CUES:
        size = len(cue.split())
        for start in range(len(folded) - size + 1):
            if folded[start : start + size] == cue.split():
                found = max(found or 0, start + size)
    for cue in OPENING_CUES:
        size = len(cue.split())
        if folded[:size] == cue.split() and found is None:
            found = size
    return found


def _is_greeting(clause: str) -> bool:
    return fold(clause.strip()) in GREETINGS


def _as_name(words: list[str], cued: bool) -> str | None:
    """``words`` as a name, if they can be one."""
    if not 1 <= len(words) <= MAX_NAME_WORDS:
        return None
    folded = [squeezed(fold(word)) for word in words]
    if folded[0] in PARTICLES or folded[-1] in PARTICLES or _reads_as_phrase(words, cued):
        return None
    if any(word in NOT_NAMES for word in folded if word not in PARTICLES):
        return None
    return " ".join(
        word.lower() if folded[i] in PARTICLES and i > 0 else _capitalised(word)
        for i, word in enumerate(words)
    )


def _reads_as_phrase(words: list[str], cued: bool) -> bool:
    """An answer with no cue that joins lower-case words with a particle reads as a phrase
    ("corte de cabelo"), not as "Maria da Silva"."""
    return (
        not cued
        and any(fold(word) in PARTICLES for word in words)
        and all(word == word.lower() for word in words)
    )


def _capitalised(word: str) -> str:
    if word != word.lower() and not (word.isupper() and len(word) > 1):
        return word  # written with capitals already ("McDonald", "O'Brien"), not shouted
    word = word.lower()
    return re.sub(r"(^|['\u2019-])(\w)", lambda match: match[1] + match[2].upper(), word)
