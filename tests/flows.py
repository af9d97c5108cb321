"""Flow definitions several test modules share."""

#: Engine-spec scenario 3: a collect flow and a silence flow that waits 2 days for a reply.
RACE_FLOWS = [
    {
        "id": "triagem",
        "on": [{"message": ["x"]}],
        "steps": [{"id": "quem", "collect": ["nome", "empresa"]}],
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
]
RACE_FIELDS = {"nome": {"type": "string"}, "empresa": {"type": "string"}}
