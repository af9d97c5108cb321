"""Yes or no, as people say it in either language: idioms of agreement and refusal, an
agreeing phrase that holds a "no" ("no problem, book it"), a negated yes ("don't book it"),
and no answer at all for a hesitation ("maybe", "não sei") or for both at once."""

from __future__ import annotations

from ..text import plain, tokens


def _phrases(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(plain(word) for word in tokens(phrase)) for phrase in text.split(","))


YES = _phrases(
    "yes,yeah,yea,yep,yup,sure,ok,okay,correct,right,affirmative,true,absolutely,"
    "definitely,certainly,of course,go ahead,sounds good,perfect,great,all good,fine,alright,"
    "cool,let's do it,lets do it,please do,do it,book it,confirm,confirmed,why not,"
    "that works,works for me,go for it,yes please,deal,"
    "sim,claro,isso,certo,pode,exato,exatamente,confirmo,confirmado,positivo,pode ser,"
    "com certeza,beleza,fechado,ta bom,esta bom,esta certo,perfeito,otimo,bora,pode marcar,"
    "combinado,sem duvida,certeza,valeu,show,massa,certinho,certin,demorou,pode crer,correto,"
    "esta correto"
)
NO = _phrases(
    "no,nope,nah,negative,false,not really,no thanks,no thank you,don't think so,not now,"
    "never,incorrect,wrong,not,"
    "nao,negativo,nunca,errado,agora nao,melhor nao,de jeito nenhum,nem pensar,nao quero,"
    "de forma alguma,nada disso,nada a ver,nem a pau,definitely not,absolutely not,"
    "of course not,certainly not,not at all,nao e isso,claro que nao,e claro que nao"
)
#: Said with a "no" or a "yes" in them, they are neither.
NEUTRAL = _phrases(
    "no problem,no worries,no changes,no change,no rush,not a problem,sem problema,"
    "sem problemas,sem alteracoes,sem alteracao,nao tem problema,no matter,right now,agora mesmo"
)
#: A hesitation: not an answer, whatever else the message holds.
UNSURE = _phrases(
    "maybe,perhaps,not sure,don't know,dont know,idk,let me think,hmm,hm,talvez,nao sei,"
    "sei la,deixa eu pensar,tanto faz,como assim,what,yes and no,sim e nao,dunno,sei nao,"
    "nao sei nao,can't say,cant say,hard to say,not certain,nao tenho certeza,sem certeza,"
    "nao sei bem,vou ver,i'll see,ill see,let me check,depende,it depends"
)
#: A word before a yes that turns it into a no ("t" is what is left of "don't").
NEGATORS = frozenset(["don", "dont", "t", "not", "nao", "never", "nunca"])  # all plain
#: One letter alone is an answer ("s", "n"); inside a message it is a piece of "it's".
LETTERS = {"y": True, "s": True, "k": True, "n": False}


def _find(words: list[str] | tuple[str, ...], phrase: tuple[str, ...]) -> list[int]:
    size = len(phrase)
    return [i for i in range(len(words) - size + 1) if tuple(words[i : i + size]) == phrase]


def _take(words: list[str], phrase: tuple[str, ...]) -> list[int]:
    """Where ``phrase`` is said; its words are taken, so a shorter phrase cannot match them."""
    starts = _find(words, phrase)
    for start in starts:
        words[start : start + len(phrase)] = [""] * len(phrase)
    return starts


def boolean(text: str) -> bool | None:
    """``True`` for agreement, ``False`` for refusal, ``None`` for neither or both."""
    found = tuple(plain(word) for word in tokens(text))
    if len(found) == 1 and found[0] in LETTERS:
        return LETTERS[found[0]]
    if any(_find(found, phrase) for phrase in UNSURE):
        return None
    words = list(found)
    for phrase in NEUTRAL:
        _take(words, phrase)
    said_no = any(_take(words, phrase) for phrase in _LONGEST_FIRST_NO if len(phrase) > 1)
    said_yes = False
    for phrase in _LONGEST_FIRST_YES:
        for start in _take(words, phrase):
            if NEGATORS & set(found[max(0, start - 2) : start]):
                said_no = True  # "don't book it", "não está certo"
            else:
                said_yes = True
    said_no = said_no or any(_find(words, phrase) for phrase in NO)
    if said_yes == said_no:
        return None
    return said_yes


_LONGEST_FIRST_YES = sorted(YES, key=len, reverse=True)
_LONGEST_FIRST_NO = sorted(NO, key=len, reverse=True)
