"""The demo's booking assistant: runs on the offline RuleModel, so `make demo` needs no network.

It exercises the engine for real: a catch-all greeting said once, a booking flow collecting
name, e-mail and preferred date (validated, not in the past, re-asked up to three times and
then given up out loud), a confirmation that takes a changed date or e-mail and asks again,
and loops back to the date on "no", ways out at any step ("cancel", "start over"), a hand-over
to people ("talk to a person": staff answer from the admin, then hand it back), one booking
after another, and a reminder after two minutes of silence while a booking is open.
"""

from __future__ import annotations

from warlock_sessions.engine import Agent
from warlock_sessions.providers import RuleModel

FIELDS = {
    "name": {
        "type": "string",
        "format": "name",
        "label": {"en": "name", "pt": "nome"},
        "ask": {"en": "What's your name?", "pt": "Qual é o seu nome?"},
    },
    "email": {
        "type": "string",
        "format": "email",
        "label": "e-mail",
        "ask": {
            "en": "Thanks, {{data.name|}}! What's your e-mail address?",
            "pt": "Obrigado, {{data.name|}}! Qual é o seu e-mail?",
        },
        "askAgain": {"en": "What's your e-mail address?", "pt": "Qual é o seu e-mail?"},
    },
    "date": {
        "type": "string",
        "format": "date",
        "label": {"en": "preferred date", "pt": "data"},
        "ask": {"en": "Which day would suit you?", "pt": "Qual dia fica bom para você?"},
        "min": "today",
        "invalid": {
            "en": "That day has already passed: which day from today on would suit you?",
            "pt": "Esse dia já passou: qual dia, de hoje em diante, fica bom para você?",
        },
    },
    "confirmed": {"type": "boolean"},
}

FLOWS = [
    {
        "id": "welcome",
        "on": [{"message": []}],
        "steps": [
            {
                "id": "hello",
                "say": {
                    "en": 'Hi! I\'m the booking assistant. Say "book" to make an appointment.',
                    "pt": 'Olá! Sou o assistente de agendamento. Diga "marcar" para agendar.',
                },
                "once": True,
            }
        ],
    },
    {
        "id": "booking",
        "on": [
            {
                "message": [
                    "book",
                    "booking",
                    "appointment",
                    "schedule",
                    "reserve",
                    "agendar",
                    "marcar",
                    # "thanks for the booking!" is not a new one
                    "!thanks",
                    "!thank you",
                    "!obrigado",
                    "!obrigada",
                    "!cheers",
                    "!thx",
                    "!valeu",
                ],
                # One booking after another: each starts afresh on the day, keeping who.
                "repeat": "always",
            }
        ],
        "clearOnStart": ["date", "confirmed"],
        "interrupts": [
            {
                "when": "cancel|never mind|forget it|stop|cancelar|deixa pra la|esquece",
                "say": {
                    "en": 'OK, I\'ve cancelled that booking. Say "book" whenever you want.',
                    "pt": 'Certo, cancelei esse agendamento. Diga "marcar" quando quiser.',
                },
            },
            {
                "when": "start over|start again|restart|recomecar|comecar de novo",
                "say": {"en": "Sure, let's start again.", "pt": "Claro, vamos recomeçar."},
                "then": {"step": "ask_name", "clear": ["name", "email", "date", "confirmed"]},
            },
            {
                "when": "talk to a person|human|agent|falar com atendente|atendente",
                # The session goes to the admin's inbox; the booking waits where it was and
                # asks again when staff hand the chat back.
                "say": {
                    "en": "I'll get a colleague for you: someone will answer here shortly.",
                    "pt": "Vou chamar um colega: alguém vai responder aqui em breve.",
                },
                "handover": "asked for a person",
            },
        ],
        "steps": [
            {
                "id": "ask_name",
                "collect": ["name"],
                "prompt": {"en": "Great, let's get you booked.", "pt": "Ótimo, vamos agendar."},
            },
            {"id": "ask_email", "collect": ["email"]},
            {
                "id": "ask_date",
                "collect": ["date"],
                "giveUp": {
                    "en": "I couldn't get a day from that, so I haven't booked anything. "
                    'Say "book" to try again.',
                    "pt": "Não consegui entender o dia, então não agendei nada. "
                    'Diga "marcar" para tentar de novo.',
                },
                "onGiveUp": "end",
            },
            {
                "id": "confirm",
                "collect": ["confirmed"],
                "ask": {
                    "en": "So that's {{data.date|the day you chose}} for {{data.name|you}} "
                    "({{data.email|no e-mail}}). Shall I book it?",
                    "pt": "Então fica {{data.date|o dia escolhido}} para {{data.name|você}} "
                    "({{data.email|sem e-mail}}). Posso confirmar?",
                },
                # "Make it friday instead" or a new e-mail changes it, and it asks again.
                "amend": ["date", "email", "name"],
                "giveUp": {
                    "en": "I'll leave it unbooked for now.",
                    "pt": "Vou deixar sem agendar por enquanto.",
                },
                "onGiveUp": "end",
            },
            {
                "id": "check",
                "if": {"equals": {"confirmed": True}},
                "then": "done",
                "else": {"step": "ask_date", "clear": ["date", "confirmed"]},
            },
            {"id": "done", "if": {"known": ["email"]}, "then": "mailed", "else": "unmailed"},
            {
                "id": "mailed",
                "say": {
                    "en": "Booked! See you on {{data.date|the day you chose}}, "
                    "{{data.name|friend}}. A confirmation is on its way to {{data.email}}.",
                    "pt": "Agendado! Até {{data.date|o dia escolhido}}, {{data.name|}}. "
                    "A confirmação vai para {{data.email}}.",
                },
                "then": "end",
            },
            {
                "id": "unmailed",
                "say": {
                    "en": "Booked! See you on {{data.date|the day you chose}}, "
                    "{{data.name|friend}}.",
                    "pt": "Agendado! Até {{data.date|o dia escolhido}}, {{data.name|}}.",
                },
            },
        ],
    },
    {
        # Fired from outside: POST /api/sessions/<id>/turn/ {"event": {"name": "discount"...}}
        "id": "offer",
        "on": [{"event": "discount"}],
        "steps": [
            {
                "id": "tell",
                "say": {
                    "en": "Good news: 10% off any booking made this week!",
                    "pt": "Boa notícia: 10% de desconto em agendamentos feitos esta semana!",
                },
            }
        ],
    },
    {
        "id": "reminder",
        # Only while a booking waits on the user: a finished booking wants no reminder.
        "on": [{"silence": "2m", "if": {"running": ["booking"]}}],
        "steps": [
            {
                "id": "nudge",
                "prompt": {
                    "en": "Are you still there? I'm here whenever you're ready.",
                    "pt": "Você ainda está aí? Estou aqui quando quiser continuar.",
                },
            }
        ],
    },
]


def booking_agent() -> Agent:
    return Agent(
        FLOWS,
        fields=FIELDS,
        model=RuleModel(),
        name="booking",
        idle={
            "prompt": {
                "en": 'I can book an appointment for you: just say "book".',
                "pt": 'Posso agendar um horário para você: é só dizer "marcar".',
            }
        },
    )
