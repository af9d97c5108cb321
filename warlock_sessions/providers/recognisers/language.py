"""Which language a message is written in, English or Portuguese, from its words: ``None``
when it does not say (a name, a number, "ok"). Short chat messages are what it is for; words
both languages share ("a", "no", "do") count for neither."""

from __future__ import annotations

from ..text import tokens, word_set

ENGLISH = word_set(
    """
    i i'm im my me you your we our they the an to and is are was be do does did can could would
    will should what how when where who why which this that it it's its for of in on at with
    have has had want like please thanks thank yes yeah not don't dont isn't can't just book
    see then tomorrow today morning afternoon evening much many times time other day days week
    perfect hi hello hey name there here about any some one two three sure okay fine great good
    right wrong maybe next friday monday tuesday wednesday thursday saturday sunday people
    table call number email phone sorry late bit little still already soon later now again
    also really very running thing works
    """
)
PORTUGUESE = word_set(
    """
    eu meu minha meus minhas voce voces o os um uma uns umas de da das dos em na nas nos para
    pra pro por com que e nao sim quero queria gostaria pode posso podemos tem temos abrem abre
    amanha hoje obrigado obrigada oi ola tudo bem bom boa dia dias tarde noite horario marcar
    agendar quanto quantos custa outro outra esta estou ta otimo ate logo sexta segunda terca
    quarta quinta sabado domingo nome sou somos seu sua mais muito semana proxima que vem
    depois talvez claro certo isso aqui chamo chamar numero telefone pessoas pessoa
    """
)
#: Letters only Portuguese (of the two) writes.
_MARKS = frozenset("ãõçâêô")


def language_of(text: str) -> str | None:
    """``"pt"`` or ``"en"``, whichever the text's words say more; ``None`` on a tie."""
    words = tokens(text)
    english = sum(1 for word in words if word in ENGLISH)
    portuguese = sum(1 for word in words if word in PORTUGUESE)
    # Portuguese letters in a capitalised word are a name's ("João Pereira" in an English
    # chat), not the language's.
    portuguese += 2 * sum(
        1 for word in text.split() if not word[:1].isupper() for char in word if char in _MARKS
    )
    if english == portuguese:
        return None
    return "pt" if portuguese > english else "en"
