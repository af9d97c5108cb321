"""Signals of the turn cycle (``host.turns``). All but ``session_conflict`` and
``turn_computed`` are sent after the turn's transaction commits, so a receiver never sees state
that could still roll back.

* ``turn_computed(session_id, input, result)``: ``turn()`` ran; the save comes next.
* ``session_saved(session_id, version, result)``: the turn is committed.
* ``session_conflict(session_id, expected_version, actual_version, attempt)``: a save lost the
  version race; the host reloads and replays.
* ``run_started(session_id, run)`` / ``run_ended(session_id, run, reason)``.
* ``message_out(session_id, message)``: a message was committed to the outbox.
* ``wake_fired(session_id, key, result)``: the worker fired a due wake.
"""

from django.dispatch import Signal

turn_computed = Signal()
session_saved = Signal()
session_conflict = Signal()
run_started = Signal()
run_ended = Signal()
message_out = Signal()
wake_fired = Signal()
