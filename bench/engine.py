"""Engine benchmark: one turn() of a message on a 3-flow agent with a ~24 KB session blob and
the FakeModel, against one raw-psycopg load+save of the same blob, in the same run.

Target (issue 3): turn() <= 0.25x the raw load+save (the engine must never limit a host).
"""

from __future__ import annotations

import argparse

import psycopg

from bench.common import bench_database_url, measure, raw_jsonb_load_save, report, verdict
from warlock_sessions.engine import Agent, FakeClock, FakeModel, Spoken, Understanding, turn
from warlock_sessions.testing import T0_MS, realistic_session

FLOWS = [
    {
        "id": "triagem",
        "on": [{"message": ["quero comprar"]}],
        "steps": [
            {"id": "quem", "collect": ["nome", "empresa"]},
            {"id": "fim", "say": "Obrigado, {{data.nome|você}}!"},
        ],
    },
    {
        "id": "retomar",
        "on": [{"silence": "24h"}],
        "steps": [
            {"id": "p1", "prompt": "Ainda por aí?"},
            {"id": "w1", "wait": "2d", "else": "end"},
            {"id": "p2", "prompt": "Última tentativa"},
        ],
    },
    {
        "id": "funil",
        "on": [{"message": ["orçamento"]}],
        "steps": [{"id": "orcamento", "collect": ["orcamento"]}, {"id": "ok", "say": "Anotado"}],
    },
]
FIELDS = {
    "nome": {"type": "string"},
    "empresa": {"type": "string"},
    "orcamento": {"type": "number"},
    "email": {"type": "string"},
    "aceitaContato": {"type": "boolean"},
}


def message_turn_setup() -> tuple[dict, callable]:
    agent = Agent(FLOWS, fields=FIELDS)
    session = realistic_session("bench")
    del session["data"]["empresa"]  # so the asking run has a field left to ask
    clock = FakeClock(T0_MS + 50 * 60_000)

    def one_turn() -> None:
        model = FakeModel(
            understand=[Understanding(flows={"funil": 20})],
            speak=[Spoken("E qual é a empresa?", fields={"empresa": None})],
        )
        result = turn(
            agent=agent,
            session_id="bench",
            session=session,
            clock=clock,
            model=model,
            message={"text": "sou a Ana", "id": "bench-message"},
        )
        assert result.changed and result.messages

    return session, one_turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args()
    session, one_turn = message_turn_setup()
    with psycopg.connect(bench_database_url(), autocommit=True) as raw:
        samples = measure(
            {"raw-psycopg-load+save": raw_jsonb_load_save(raw, session), "turn()": one_turn},
            iterations=args.iterations,
        )
    ratios = report(samples, baseline="raw-psycopg-load+save")
    print(verdict("turn() / raw load+save", ratios["turn()"], 0.25))


if __name__ == "__main__":
    main()
