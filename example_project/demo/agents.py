"""The demo's booking assistant: runs on the offline RuleModel, so `make demo` needs no network.

It exercises the engine for real: a catch-all greeting said once, a booking flow collecting
name, e-mail, preferred date and time (validated: not in the past, within opening hours;
re-asked up to three times and then given up out loud), a confirmation that takes a changed
date, time or e-mail and asks again, and loops back to the date on "no", ways out at any step
("cancel", "start over"), a hand-over to people ("talk to a person": staff answer from the
admin, then hand it back), a new booking while one is booked asking first whether to cancel
it, "cancel" after a booking naming it and asking first, and a reminder after two minutes of
silence while a booking is open.
"""

from __future__ import annotations

import os

from warlock_sessions.engine import Agent
from warlock_sessions.providers import RuleModel

#: How long the reminder waits for a silent user; the cluster tests make it seconds.
REMINDER_AFTER = os.environ.get("DEMO_REMINDER_AFTER", "2m")

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
        "label": {"en": "e-mail", "pt": "e-mail"},
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
    "time": {
        "type": "string",
        "format": "time",
        "label": {"en": "time", "pt": "horário"},
        "ask": {
            "en": "What time suits you? We're open from 09:00 to 17:00.",
            "pt": "Que horário fica bom para você? Atendemos das 09:00 às 17:00.",
        },
        "askAgain": {"en": "What time suits you?", "pt": "Que horário fica bom para você?"},
        # Opening hours: "at 3" is 15:00, "8am" is refused with this sentence.
        "min": "09:00",
        "max": "17:00",
        "invalid": {
            "en": "We're open from 09:00 to 17:00: which time in those hours suits you?",
            "pt": "Atendemos das 09:00 às 17:00: que horário nesse intervalo fica bom?",
        },
    },
    "confirmed": {"type": "boolean"},
    "unbook": {"type": "boolean"},
    "rebook": {"type": "boolean"},
}

#: What starts a booking: "thanks for the booking!" is not a new one, "cancel my booking"
#: neither.
BOOK = [
    "book", "booking", "appointment", "schedule", "reserve", "agendar", "marcar", "!thanks",
    "!thank you", "!obrigado", "!obrigada", "!cheers", "!thx", "!valeu", "!cancel",
    "!cancelar", "!desmarcar",
]  # fmt: skip
KEPT = {
    "en": "OK, it stays booked: see you on {{data.date|the day you chose}} at "
    "{{data.time|the time you chose}}.",
    "pt": "Certo, continua agendado: até {{data.date|o dia escolhido}} às "
    "{{data.time|o horário escolhido}}.",
}

#: "Talk to a person" in any state, a booking open or none: the session goes to the admin's
#: inbox and every run waits where it was (a booking asks its question again when staff hand
#: the chat back). Asked for in so many words: "I'm human" or a travel agent hands nothing over.
HANDOVER = {
    "when": "talk to a person|talk to a human|speak to a human|a real person|human please"
    "|speak to an agent|talk to an agent|speak to someone|falar com atendente"
    "|falar com uma pessoa|falar com alguem|atendente|!travel agent|!i'm human|!im human",
    "say": {
        "en": "I'll get a colleague for you: someone will answer here shortly.",
        "pt": "Vou chamar um colega: alguém vai responder aqui em breve.",
    },
    "handover": "asked for a person",
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
                "message": BOOK,
                # Not while one is booked: "rebook" asks first whether to cancel it.
                "if": {"equals": {"confirmed": None}},
                # One booking after another: each starts afresh on the day, keeping who.
                "repeat": "always",
            }
        ],
        # The trigger's condition is for starting only: the run goes on once it books.
        "while": {},
        "clearOnStart": ["date", "time", "confirmed"],
        "interrupts": [
            {
                # "Don't cancel", "I'll stop by" or "never mind the parking" leave nothing.
                "when": "cancel|never mind|forget it|stop|cancelar|deixa pra la|esquece"
                "|!don't cancel|!dont cancel|!no need to cancel|!not cancel|!nao cancela"
                "|!nao precisa cancelar|!stop by|!never mind the|!nao cancelar",
                "say": {
                    "en": 'OK, I\'ve cancelled that booking. Say "book" whenever you want.',
                    "pt": 'Certo, cancelei esse agendamento. Diga "marcar" quando quiser.',
                },
            },
            {
                "when": "start over|start again|restart|recomecar|comecar de novo"
                "|!no need to start over|!don't start over|!nao precisa recomecar",
                "say": {"en": "Sure, let's start again.", "pt": "Claro, vamos recomeçar."},
                "then": {
                    "step": "ask_name",
                    "clear": ["name", "email", "date", "time", "confirmed"],
                },
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
                "id": "ask_time",
                "collect": ["time"],
                "giveUp": {
                    "en": "I couldn't get a time from that, so I haven't booked anything. "
                    'Say "book" to try again.',
                    "pt": "Não consegui entender o horário, então não agendei nada. "
                    'Diga "marcar" para tentar de novo.',
                },
                "onGiveUp": "end",
            },
            {
                "id": "confirm",
                "collect": ["confirmed"],
                "ask": {
                    "en": "So that's {{data.date|the day you chose}} at {{data.time|the time "
                    "you chose}} for {{data.name|you}} ({{data.email|no e-mail}}). "
                    "Shall I book it?",
                    "pt": "Então fica {{data.date|o dia escolhido}} às {{data.time|o horário "
                    "escolhido}} para {{data.name|você}} ({{data.email|sem e-mail}}). "
                    "Posso confirmar?",
                },
                # "Make it friday at 4 instead" or a new e-mail changes it, and it asks again.
                "amend": ["date", "time", "email", "name"],
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
                "else": {"step": "ask_date", "clear": ["date", "time", "confirmed"]},
            },
            {"id": "done", "if": {"known": ["email"]}, "then": "mailed", "else": "unmailed"},
            {
                "id": "mailed",
                "say": {
                    "en": "Booked! See you on {{data.date|the day you chose}} at "
                    "{{data.time|the time you chose}}, {{data.name|friend}}. "
                    "A confirmation is on its way to {{data.email}}.",
                    "pt": "Agendado! Até {{data.date|o dia escolhido}} às "
                    "{{data.time|o horário escolhido}}, {{data.name|}}. "
                    "A confirmação vai para {{data.email}}.",
                },
                "then": "end",
            },
            {
                "id": "unmailed",
                "say": {
                    "en": "Booked! See you on {{data.date|the day you chose}} at "
                    "{{data.time|the time you chose}}, {{data.name|friend}}.",
                    "pt": "Agendado! Até {{data.date|o dia escolhido}} às "
                    "{{data.time|o horário escolhido}}, {{data.name|}}.",
                },
            },
        ],
    },
    {
        # A new booking while one is booked would replace it: that is said, and asked first,
        # so "cancel my booking" later is never about a booking the user thinks they have.
        "id": "rebook",
        "on": [
            {
                # Changing a booking is making a new one in its place.
                "message": [*BOOK, "change", "reschedule", "move", "remarcar", "mudar"],
                "if": {"equals": {"confirmed": True}},
                "repeat": "always",
            }
        ],
        "clearOnStart": ["rebook"],
        # "Cancel" here is about the booking: the question of cancelling it is asked; other
        # ways out leave it booked. Either way this question is gone, not left to a later "ok".
        "interrupts": [
            {"when": "cancel|cancelar|desmarcar", "then": {"flow": "unbook"}},
            {
                "when": "never mind|forget it|stop|start over|deixa pra la|esquece|recomecar",
                "say": KEPT,
            },
        ],
        "steps": [
            {
                "id": "replace",
                "collect": ["rebook"],
                "ask": {
                    "en": "You're booked for {{data.date|the day you chose}} at "
                    "{{data.time|the time you chose}}. Shall I cancel it and make a new "
                    "booking?",
                    "pt": "Você tem um agendamento para {{data.date|o dia escolhido}} às "
                    "{{data.time|o horário escolhido}}. Quer que eu cancele e faça um novo?",
                },
                "giveUp": {
                    "en": "I'll keep the booking as it is.",
                    "pt": "Vou manter o agendamento como está.",
                },
                "onGiveUp": "end",
            },
            {
                "id": "decide",
                "if": {"equals": {"rebook": True}},
                "then": "replaced",
                "else": "kept",
            },
            {
                "id": "replaced",
                "say": {
                    "en": "I've cancelled your booking for {{data.date|that day}} at "
                    "{{data.time|that time}}. Which day would suit you for the new one?",
                    "pt": "Cancelei o seu agendamento de {{data.date|esse dia}} às "
                    "{{data.time|esse horário}}. Qual dia fica bom para o novo?",
                },
                "then": {"flow": "booking"},
            },
            {"id": "kept", "say": KEPT},
        ],
    },
    {
        # "Cancel" once a booking is made is about that booking: it is named, and kept
        # unless the user says yes.
        "id": "unbook",
        "on": [
            {
                "message": [
                    "cancel",
                    "cancel my booking",
                    "cancel the appointment",
                    "cancelar",
                    "desmarcar",
                    "cancelar o agendamento",
                ],
                "if": {"equals": {"confirmed": True}},
                "repeat": "always",
            }
        ],
        "clearOnStart": ["unbook"],
        "steps": [
            {
                "id": "sure",
                "collect": ["unbook"],
                "ask": {
                    "en": "You're booked for {{data.date|the day you chose}} at "
                    "{{data.time|the time you chose}}. Shall I cancel that booking?",
                    "pt": "Você tem um agendamento para {{data.date|o dia escolhido}} às "
                    "{{data.time|o horário escolhido}}. Quer que eu cancele?",
                },
                "giveUp": {
                    "en": "I'll keep the booking as it is.",
                    "pt": "Vou manter o agendamento como está.",
                },
                "onGiveUp": "end",
            },
            {
                "id": "decide",
                "if": {"equals": {"unbook": True}},
                # No longer a confirmed booking: "cancel" again is not about it.
                "then": {"step": "cancelled", "clear": ["confirmed"]},
                "else": "kept",
            },
            {
                "id": "cancelled",
                "say": {
                    "en": "Done: I've cancelled your booking for {{data.date|that day}} at "
                    '{{data.time|that time}}. Say "book" whenever you want another.',
                    "pt": "Pronto: cancelei o seu agendamento de {{data.date|esse dia}} às "
                    '{{data.time|esse horário}}. Diga "marcar" quando quiser outro.',
                },
                "then": "end",
            },
            {"id": "kept", "say": KEPT},
        ],
    },
    {
        # "Cancel" with nothing booked says so, rather than greet or offer a booking blindly.
        "id": "nothing_to_cancel",
        "on": [
            {
                "message": ["cancel", "cancel my booking", "cancelar", "desmarcar"],
                # Nothing booked and nothing being booked (a booking's own "cancel" is its).
                "if": {"equals": {"confirmed": None}, "running": False},
                "repeat": "always",
            }
        ],
        "steps": [
            {
                "id": "none",
                "say": {
                    "en": 'There\'s nothing booked to cancel. Say "book" whenever you want an '
                    "appointment.",
                    "pt": 'Não há nada agendado para cancelar. Diga "marcar" quando quiser '
                    "agendar.",
                },
            }
        ],
    },
    {
        # Thanks are answered as thanks (after a booking, with the day it is for), not with
        # the offer to book.
        "id": "thanks",
        "on": [
            {
                "message": [
                    "thanks",
                    "thank you",
                    "cheers",
                    "thx",
                    "obrigado",
                    "obrigada",
                    "valeu",
                ],
                # Not while a booking asks: "thanks, it's ana@example.com" answers it.
                "if": {"running": False},
                "repeat": "always",
            }
        ],
        "steps": [
            {
                "id": "booked",
                "if": {"equals": {"confirmed": True}},
                "then": "see_you",
                "else": "welcome",
            },
            {
                "id": "see_you",
                "say": {
                    "en": "You're welcome! See you on {{data.date|the day you chose}} at "
                    "{{data.time|the time you chose}}.",
                    "pt": "De nada! Até {{data.date|o dia escolhido}} às "
                    "{{data.time|o horário escolhido}}.",
                },
                "then": "end",
            },
            {
                "id": "welcome",
                "say": {
                    "en": 'You\'re welcome! Say "book" whenever you want an appointment.',
                    "pt": 'De nada! Diga "marcar" quando quiser agendar.',
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
        "on": [{"silence": REMINDER_AFTER, "if": {"running": ["booking"]}}],
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
        interrupts=[HANDOVER],
        idle={
            "prompt": {
                "en": 'I can book an appointment for you: just say "book".',
                "pt": 'Posso agendar um horário para você: é só dizer "marcar".',
            }
        },
    )
