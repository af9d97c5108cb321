"""Other frameworks' state on these tables, against the stores their users pick today, on the
same PostgreSQL, interleaved (issue 41 §3):

1. LangGraph: a 50-step graph's checkpoints (per step the latest ``get_tuple``, ``put`` of a
   checkpoint whose message list grew by one, ``put_writes`` of the next step's writes; then
   ``list``) with ``WarlockSaver`` against ``langgraph-checkpoint-postgres``'s
   ``PostgresSaver``. Target <= 0.8x. Then ``get_tuple`` and a page of ``list`` (10) in a
   thread of 10,000 checkpoints against one of 10. Target <= 1.2x.
2. OpenAI Agents SDK: 20 turns of ``get_items`` + ``add_items`` (what ``Runner.run`` does with
   a session) with ``WarlockSession`` against the SDK's ``SQLAlchemySession``. Target <=
   0.8x. Then ``get_items(limit=20)`` at 10,000 items against 20. Target <= 1.2x.
3. Google ADK: 20 turns of ``get_session`` + two ``append_event`` (the user's and the
   agent's, with a state delta) with ``WarlockSessionService`` against ADK's
   ``DatabaseSessionService``. Target <= 0.5x.

Each contender runs on its own connection(s) with the options its docs recommend (Django's
as docs/stores.md recommends; the others as their constructors default).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench.common import bench_database_url, configure_django, vacuum, verdict

TEXT = "lorem ipsum dolor sit amet " * 10  # a message of about 300 bytes


def interleaved(contenders: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Each contender's median seconds over ``rounds`` runs, one of each in turn."""
    for run in contenders.values():  # warm up
        run()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, run in contenders.items():
            started = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    width = max(map(len, medians))
    for name, median in medians.items():
        print(f"  {name:<{width}}  {median * 1e3:9.2f} ms")
    return medians


# -- 1. LangGraph ----------------------------------------------------------------------------


def graph_steps(saver: Any, thread_id: str, steps: int, *, growing: bool = True) -> None:
    """What a graph's run asks of its checkpointer, step by step, then its history listed;
    not ``growing``: each step keeps one message (a long thread, seeded)."""
    from langgraph.checkpoint.base.id import uuid6

    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    versions: dict[str, Any] = {}
    messages: list[dict[str, str]] = []
    for step in range(steps):
        saver.get_tuple(config)
        said = {"role": "user" if step % 2 else "assistant", "content": TEXT}
        messages = [*messages, said] if growing else [said]
        new = {
            channel: saver.get_next_version(versions.get(channel), None)
            for channel in ("messages", "step")
        }
        versions.update(new)
        checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=step)),
            "ts": datetime.now(UTC).isoformat(),
            "channel_values": {"messages": messages, "step": step},
            "channel_versions": dict(versions),
            "versions_seen": {"agent": dict(versions)},
            "updated_channels": list(new),
        }
        metadata = {"source": "loop", "step": step, "parents": {}}
        config = saver.put(config, checkpoint, metadata, new)
        writes = [("messages", [{"role": "assistant", "content": TEXT}]), ("step", step + 1)]
        saver.put_writes(config, writes, str(uuid.uuid4()))
    if growing:
        list(saver.list({"configurable": {"thread_id": thread_id}}))


def langgraph_benchmark(url: str, rounds: int) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    from warlock_sessions.frameworks.langgraph import WarlockSaver

    print("1. LangGraph: a 50-step graph's checkpoints")
    ours = WarlockSaver()
    with PostgresSaver.from_conn_string(url) as theirs:
        theirs.setup()
        medians = interleaved(
            {
                "PostgresSaver": lambda: graph_steps(theirs, f"pg-{uuid.uuid4()}", 50),
                "WarlockSaver": lambda: graph_steps(ours, f"w-{uuid.uuid4()}", 50),
            },
            rounds,
        )
    print(
        verdict(
            "WarlockSaver / PostgresSaver", medians["WarlockSaver"] / medians["PostgresSaver"], 0.8
        )
    )
    print("   get_tuple and list(limit=10) in a thread of 10,000 checkpoints against 10")
    graph_steps(ours, "long", 10_000, growing=False)
    graph_steps(ours, "short", 10, growing=False)
    vacuum()  # this server runs without autovacuum: the planner learns the tables' sizes

    def read(thread_id: str) -> Callable[[], None]:
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}

        def run() -> None:
            for _ in range(20):
                ours.get_tuple(config)
                list(ours.list(config, limit=10))

        return run

    reads = interleaved(
        {"10 checkpoints": read("short"), "10,000 checkpoints": read("long")}, rounds
    )
    print(verdict("at 10,000 / at 10", reads["10,000 checkpoints"] / reads["10 checkpoints"], 1.2))


# -- 2. OpenAI Agents SDK ---------------------------------------------------------------------


async def sdk_turns(session: Any, turns: int) -> None:
    for turn in range(turns):
        await session.get_items()
        await session.add_items(
            [
                {"role": "user", "content": f"question {turn}: {TEXT}"},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": TEXT, "annotations": []}],
                },
            ]
        )


def openai_agents_benchmark(url: str, rounds: int) -> None:
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    from warlock_sessions.frameworks.openai_agents import WarlockSession

    print("2. OpenAI Agents SDK: 20 turns of get_items + add_items")
    loop = asyncio.new_event_loop()
    engine = create_async_engine(sqlalchemy_url(url))

    def theirs() -> None:
        session = SQLAlchemySession(f"sa-{uuid.uuid4()}", engine=engine, create_tables=True)
        loop.run_until_complete(sdk_turns(session, 20))

    def ours() -> None:
        loop.run_until_complete(sdk_turns(WarlockSession(f"w-{uuid.uuid4()}"), 20))

    medians = interleaved({"SQLAlchemySession": theirs, "WarlockSession": ours}, rounds)
    print(
        verdict(
            "WarlockSession / SQLAlchemySession",
            medians["WarlockSession"] / medians["SQLAlchemySession"],
            0.8,
        )
    )
    print("   get_items(limit=20) at 10,000 items against 20")
    long, short = WarlockSession("sdk-long"), WarlockSession("sdk-short")
    for session, count in ((long, 10_000), (short, 20)):
        loop.run_until_complete(session.clear_session())
        items = [{"role": "user", "content": f"{n}: {TEXT}"} for n in range(count)]
        for start in range(0, count, 1000):
            loop.run_until_complete(session.add_items(items[start : start + 1000]))

    def latest(session: Any) -> Callable[[], None]:
        async def twenty() -> None:
            for _ in range(20):
                await session.get_items(limit=20)

        return lambda: loop.run_until_complete(twenty())

    reads = interleaved({"20 items": latest(short), "10,000 items": latest(long)}, rounds)
    print(verdict("at 10,000 / at 20", reads["10,000 items"] / reads["20 items"], 1.2))
    loop.run_until_complete(engine.dispose())
    loop.close()


# -- 3. Google ADK ---------------------------------------------------------------------------


async def adk_turns(service: Any, turns: int) -> None:
    from google.adk.events import Event, EventActions
    from google.genai import types

    session = await service.create_session(app_name="bench", user_id="ana")
    for turn in range(turns):
        session = await service.get_session(app_name="bench", user_id="ana", session_id=session.id)
        for author in ("user", "helper"):
            event = Event(
                invocation_id=f"inv-{turn}",
                author=author,
                content=types.Content(
                    role="user" if author == "user" else "model", parts=[types.Part(text=TEXT)]
                ),
                actions=EventActions(state_delta={"turn": turn, "user:seen": turn}),
            )
            await service.append_event(session, event)


def adk_benchmark(url: str, rounds: int) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    from warlock_sessions.frameworks.adk import WarlockSessionService

    print("3. Google ADK: 20 turns of get_session + two append_event")
    loop = asyncio.new_event_loop()
    theirs = DatabaseSessionService(sqlalchemy_url(url))
    ours = WarlockSessionService()
    medians = interleaved(
        {
            "DatabaseSessionService": lambda: loop.run_until_complete(adk_turns(theirs, 20)),
            "WarlockSessionService": lambda: loop.run_until_complete(adk_turns(ours, 20)),
        },
        rounds,
    )
    ratio = medians["WarlockSessionService"] / medians["DatabaseSessionService"]
    print(verdict("WarlockSessionService / DatabaseSessionService", ratio, 0.5))
    loop.run_until_complete(theirs.close())
    loop.close()


def sqlalchemy_url(conninfo: str) -> str:
    """The benchmark database as SQLAlchemy names it, through psycopg's async driver."""
    import psycopg

    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    user = params.get("user", "postgres")
    return (
        f"postgresql+psycopg://{user}@{params.get('host', '127.0.0.1')}:"
        f"{params.get('port', 5432)}/{params['dbname']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", choices=["langgraph", "openai-agents", "adk"])
    args = parser.parse_args()
    url = bench_database_url()
    configure_django(url)
    from bench.common import empty_tables
    from warlock_sessions.models import (
        AgentState,
        Conversation,
        ConversationMessage,
        GraphBlob,
        GraphCheckpoint,
        GraphThread,
        GraphWrite,
    )

    empty_tables(
        GraphWrite,
        GraphBlob,
        GraphCheckpoint,
        GraphThread,
        ConversationMessage,
        Conversation,
        AgentState,
    )
    for name, benchmark in (
        ("langgraph", langgraph_benchmark),
        ("openai-agents", openai_agents_benchmark),
        ("adk", adk_benchmark),
    ):
        if args.only in (None, name):
            benchmark(url, args.rounds)


if __name__ == "__main__":
    main()
