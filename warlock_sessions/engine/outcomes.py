"""Every outcome code the engine writes, with its one English sentence.

Switch on ``outcome["code"]``; ``message`` is this sentence, copied onto every line so a log
reads on its own. To show lines in another language, map the code yourself.
"""

from __future__ import annotations

OUTCOME_MESSAGES: dict[str, str] = {
    # Ignored input (wait/skipped, changed=False)
    "no-session": "a wake arrived for a session that does not exist",
    "duplicate-input": "this input was already applied",
    "stale-wake": "no run is waiting on this wake",
    "silence-broken": "someone wrote after this silence wake was set",
    # Trigger skips (TurnResult.skipped)
    "already-claimed": "this flow already ran here",
    "cooldown": "the flow's cooldown has not passed",
    "hop-limit": "the chain reached the hop limit",
    "already-running": "a run of this flow is already live here",
    "flow-gone": "the flow is no longer registered on the agent",
    # Run-ending
    "step-loop": "the run moved through 50 steps in one turn",
    "step-gone": "the step is no longer in the flow",
    "customer-replied": "the customer wrote before the wake fired",
    "premise-changed": "the flow's while condition no longer holds",
    "silenced": "the host cannot speak right now",
    # Talk / collect / say
    "already-known": "every field this step collects is known",
    "asked-fixed": "the step's fixed question was sent as written",
    "another-reply": "another run already answered this turn",
    "already-sent": "this message was already sent once",
    "branch": "a branch of this step fired",
    "max-asks": "the field was asked the most times allowed",
    "required-missing": "a required field is still missing after its asks (asked again)",
    "interrupted": "the user asked to leave the flow (one of its interrupts)",
    "agent-interrupted": "the user said one of the agent's interrupts, heard in any state",
    "unresolved-placeholder": "a placeholder had no value and no fallback, so it was left out",
    # Waits
    "inline-delay": "a short wait rides on the next message",
    "awaiting-trigger": "the trigger's delay has not passed",
    "awaiting-event": "the run is waiting for an event",
    "event-arrived": "the event was reported",
    "no-event": "the event did not arrive in time",
    "replied": "the customer replied while the run waited",
    "no-reply": "the customer did not reply while the run waited",
    # Do
    "action-skipped": "the action decided not to run",
    "action-failed": "the action failed",
    "action-deferred": "the action asked to run again later",
    # Dropped values
    "unknown-field": "no field by that name is declared on the agent",
    "bad-value": "the value did not fit the field's type",
    "not-in-enum": "the value is not one of the field's options",
    "out-of-range": "the value is outside the field's min and max",
    "no-match": "the value does not match the field's pattern",
    "amended": "the user changed a value the step was confirming, so it asks again",
    # Handover (engine.handover)
    "handed-over": "the session was handed to people: the bot stops answering",
    "handover-taken": "a person took the session and answers it",
    "handed-back": "people handed the session back to the bot",
    "with-people": "people have the session: the bot does not answer",
    "wake-held": "people have the session: the wake fires when they hand it back",
    "not-handed-over": "the bot has the session: there is nothing to hand back",
    # Provider
    "provider-unavailable": "the model call failed or came back empty",
    "provider-quota": "the provider's usage limit is spent",
    "provider-auth": "the provider rejected the credentials",
    "provider-context": "the conversation outgrew the model's context window",
    "provider-invalid": "the provider rejected the request",
}
