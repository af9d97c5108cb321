"""The turn cycle on Django: ``Host.handle`` runs turns with conditional saves, a transactional
outbox, an event log and durable wakes; ``run_due_wakes`` and the ``Worker`` fire the wakes."""

from .notify import group_name
from .turns import Host, HostedTurn
from .worker import Shard, Worker, deliver_due_messages, run_due_wakes

__all__ = [
    "Host",
    "HostedTurn",
    "Shard",
    "Worker",
    "deliver_due_messages",
    "group_name",
    "run_due_wakes",
]
