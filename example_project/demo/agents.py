"""The demo's booking assistant: runs on the offline RuleModel, so `make demo` needs no network.

It exercises the engine for real: a catch-all greeting said once, a booking flow collecting
name, e-mail and preferred date (validated, not in the past, re-asked up to three times and
then given up out loud), a confirmation that takes a changed date or e-mail and asks again,
and loops back to the date on "no", ways out at any step ("cancel", "start over", "talk to a
person"), one booking after another, and a reminder after two minutes of silence while a
booking is open.
"""

from __future__ import annotations

from warlock_sessions.engine import Agent
from warlock_sessions.providers import RuleModel

FIELDS = {
    "name": {"type": "string", "format": "name", "label": "name", "ask": "What's your name?"},
    "email": {
        "type": "string",
        "format": "email",
        "label": "e-mail",
        "ask": "Thanks, {{data.name|}}! What's your e-mail address?",
    },
    "date": {
        "type": "string",
        "format": "date",
        "label": "preferred date",
        "ask": "Which day would suit you?",
        "min": "today",
        "invalid": "That day has already passed: which day from today on would suit you?",
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
                "say": 'Hi! I\'m the booking assistant. Say "book" to make an appointment.',
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
                ],
                # One booking after another: each starts afresh on the day, keeping who.
                "repeat": "always",
            }
        ],
        "clearOnStart": ["date", "confirmed"],
        "interrupts": [
            {
                "when": "cancel|never mind|forget it|stop|cancelar|deixa pra la|esquece",
                "say": 'OK, I\'ve cancelled that booking. Say "book" whenever you want.',
            },
            {
                "when": "start over|start again|restart|recomecar|comecar de novo",
                "say": "Sure, let's start again.",
                "then": {"step": "ask_name", "clear": ["name", "email", "date", "confirmed"]},
            },
            {
                "when": "talk to a person|human|agent|falar com atendente|atendente",
                # A real deployment would hand over here (an action notifying the team); the
                # demo has nobody on call, and says so.
                "say": "There's nobody on call in this demo, so I've stopped the booking; a "
                "colleague would see this conversation in the admin.",
            },
        ],
        "steps": [
            {"id": "ask_name", "collect": ["name"], "prompt": "Great, let's get you booked."},
            {"id": "ask_email", "collect": ["email"]},
            {
                "id": "ask_date",
                "collect": ["date"],
                "giveUp": "I couldn't get a day from that, so I haven't booked anything. "
                'Say "book" to try again.',
                "onGiveUp": "end",
            },
            {
                "id": "confirm",
                "collect": ["confirmed"],
                "ask": "So that's {{data.date|the day you chose}} for {{data.name|you}} "
                "({{data.email|no e-mail}}). Shall I book it?",
                # "Make it friday instead" or a new e-mail changes it, and it asks again.
                "amend": ["date", "email", "name"],
                "giveUp": "I'll leave it unbooked for now.",
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
                "say": "Booked! See you on {{data.date|the day you chose}}, {{data.name|friend}}. "
                "A confirmation is on its way to {{data.email}}.",
                "then": "end",
            },
            {
                "id": "unmailed",
                "say": "Booked! See you on {{data.date|the day you chose}}, {{data.name|friend}}.",
            },
        ],
    },
    {
        # Fired from outside: POST /api/sessions/<id>/turn/ {"event": {"name": "discount"...}}
        "id": "offer",
        "on": [{"event": "discount"}],
        "steps": [{"id": "tell", "say": "Good news: 10% off any booking made this week!"}],
    },
    {
        "id": "reminder",
        # Only while a booking waits on the user: a finished booking wants no reminder.
        "on": [{"silence": "2m", "if": {"running": ["booking"]}}],
        "steps": [
            {"id": "nudge", "prompt": "Are you still there? I'm here whenever you're ready."}
        ],
    },
]


def booking_agent() -> Agent:
    return Agent(
        FLOWS,
        fields=FIELDS,
        model=RuleModel(),
        name="booking",
        idle={"prompt": 'I can book an appointment for you: just say "book".'},
    )
