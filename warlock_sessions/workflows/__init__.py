"""Durable runs: workflows (steps with retries, failure routes and parallel groups) and
supervisors (a router choosing intents until it ends), each snapshotted after every step so it
resumes after a crash, and refusing to resume a changed definition (docs/workflows.md)."""

from .orchestrator import Orchestrator, OrchestratorTurn
from .protocol import RunnableAgent
from .runs import cancel_saved
from .signature import agent_signature, fnv1a32, supervisor_signature, workflow_signature
from .supervisor import (
    SUPERVISOR_END,
    Intent,
    Supervisor,
    SupervisorContext,
    SupervisorResult,
)
from .workflow import END, Retry, Step, StepContext, Workflow, WorkflowResult

__all__ = [
    "END",
    "SUPERVISOR_END",
    "Intent",
    "Orchestrator",
    "OrchestratorTurn",
    "Retry",
    "RunnableAgent",
    "Step",
    "StepContext",
    "Supervisor",
    "SupervisorContext",
    "SupervisorResult",
    "Workflow",
    "WorkflowResult",
    "agent_signature",
    "cancel_saved",
    "fnv1a32",
    "supervisor_signature",
    "workflow_signature",
]
