"""The demo's booking assistant: runs on the offline RuleModel, so `make demo` needs no network.

It exercises the engine for real: a catch-all greeting said once, a booking flow collecting
name, e-mail and preferred date (validated, re-asked up to three times), a confirmation that
loops back to the date on "no", and a reminder after two minutes of silence while a
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
        "ask": "Thanks, {{data.name}}! What's your e-mail address?",
    },
    "date": {
        "type": "string",
        "format": "date",
        "label": "preferred date",
        "ask": "Which day would suit you?",
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
                ]
            }
        ],
        "steps": [
            {"id": "ask_name", "collect": ["name"], "prompt": "Great, let's get you booked."},
            {"id": "ask_email", "collect": ["email"]},
            {"id": "ask_date", "collect": ["date"]},
            {
                "id": "confirm",
                "collect": ["confirmed"],
                "ask": "So that's {{data.date}} for {{data.name}} ({{data.email}}). "
                "Shall I book it?",
            },
            {
                "id": "check",
                "if": {"equals": {"confirmed": True}},
                "then": "done",
                "else": {"step": "ask_date", "clear": ["date", "confirmed"]},
            },
            {
                "id": "done",
                "say": "Booked! See you on {{data.date}}, {{data.name}}. "
                "A confirmation is on its way to {{data.email}}.",
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
