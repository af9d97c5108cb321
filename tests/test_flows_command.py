"""``manage.py warlock_flows`` and the flowchart it draws (the admin draws the same text)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from example_project.demo.agents import booking_agent
from warlock_sessions.engine import Agent
from warlock_sessions.engine.graph import mermaid

BOOKING = {"AGENTS": {"booking": "example_project.demo.agents.booking_agent"}}


def broken_agent() -> Agent:
    return Agent([{"id": "f", "steps": [{"id": "s", "say": 3}]}])


def test_each_flow_is_a_subgraph_with_its_moves_and_the_current_step_highlighted() -> None:
    text = mermaid(booking_agent(), [("booking", "confirm"), ("reminder", None)])
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert [line.strip() for line in lines if "subgraph" in line] == [
        'subgraph f0_box["welcome"]',
        'subgraph f1_box["booking"]',
        'subgraph f2_box["rebook"]',
        'subgraph f3_box["unbook"]',
        'subgraph f4_box["nothing_to_cancel"]',
        'subgraph f5_box["thanks"]',
        'subgraph f6_box["offer"]',
        'subgraph f7_box["reminder"]',
    ]
    assert '    f1_s4["confirm: ask confirmed"]' in lines
    assert '  f1_s5 -->|"no"| f1_s2' in lines  # the {step, clear} move back to the date
    assert '  f1_s4 -.->|"gives up"| f1_end' in lines
    assert "  f1_stop1 -.-> f1_s0" in lines  # "start over" goes back to the name
    assert lines[-2:] == ["  class f1_s4 current", "  class f7_on current"]
    # "Talk to a person" is the agent's, heard in any state: drawn apart, the runs staying.
    assert '  agent_stop0 -.-> agent_stop0_to[/"to people: every run stays where it was"/]' in lines


def test_labels_cannot_break_out_of_their_quotes() -> None:
    agent = Agent([{"id": "f", "steps": [{"id": "s", "say": 'a "quote" <b>{x}</b> & `tick`'}]}])
    node = next(line for line in mermaid(agent).splitlines() if "f0_s0" in line)
    assert (
        node
        == '    f0_s0>"s: say: a #34;quote#34; #60;b#62;#123;x#125;#60;/b#62; #38; #96;tick#96;"]'
    )


def test_a_sentence_in_several_languages_is_labelled_with_its_english() -> None:
    agent = Agent([{"id": "f", "steps": [{"id": "s", "say": {"en": "Hello", "pt": "Olá"}}]}])
    node = next(line for line in mermaid(agent).splitlines() if "f0_s0" in line)
    assert node == '    f0_s0>"s: say: Hello"]'


def test_a_chain_to_another_flow_points_at_its_start() -> None:
    agent = Agent(
        [
            {"id": "a", "steps": [{"id": "s", "say": "hi", "then": {"flow": "b"}}]},
            {"id": "b", "steps": [{"id": "t", "wait": {"event": "paid", "upTo": "1d"}}]},
        ]
    )
    lines = mermaid(agent).splitlines()
    assert "  f0_s0 --> f1_on" in lines
    assert '  f1_s0 -.->|"timeout"| f1_end' in lines


@override_settings(WARLOCK_SESSIONS=BOOKING)
def test_graph_writes_mermaid_text_or_a_page_that_draws_it_offline(tmp_path: Path) -> None:
    out = StringIO()
    call_command("warlock_flows", "graph", "booking", stdout=out)
    assert out.getvalue() == mermaid(booking_agent())

    page = tmp_path / "booking.html"
    call_command("warlock_flows", "graph", "booking", "--output", str(page), stdout=StringIO())
    html = page.read_text()
    assert '<pre class="mermaid">flowchart TD' in html
    assert "mermaid.initialize" in html and "https://" not in html.split("<script>")[0]


@override_settings(WARLOCK_SESSIONS=BOOKING)
def test_graph_of_an_agent_not_configured_names_the_ones_there_are() -> None:
    with pytest.raises(CommandError, match=r"no agent 'nope'.*configured: booking"):
        call_command("warlock_flows", "graph", "nope")


@override_settings(
    WARLOCK_SESSIONS={
        "AGENTS": {**BOOKING["AGENTS"], "broken": "tests.test_flows_command.broken_agent"}
    }
)
def test_check_reports_each_agent_and_fails_on_a_broken_one() -> None:
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="1 of 2 agents are broken"):
        call_command("warlock_flows", "check", stdout=out, stderr=err)
    assert out.getvalue() == "booking: ok (8 flows)\n"
    assert err.getvalue() == (
        "broken: flows[0].steps[0].say: expected the text to send, or one per language like "
        "{'en': ..., 'pt': ...}\n"
    )


@override_settings(WARLOCK_SESSIONS=BOOKING)
@pytest.mark.django_db
def test_the_admin_session_page_draws_the_agent_with_the_static_script(client) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import User

    from warlock_sessions.host import Host

    Host("booking").handle("s1", {"message": {"text": "book", "id": "m1"}})
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/admin/warlock_sessions/session/s1/change/").content.decode()
    assert "class f1_s0 current" in page
    assert "/static/warlock_sessions/vendor/mermaid-12.3.0.min.js" in page


@override_settings(WARLOCK_SESSIONS=BOOKING)
def test_graph_without_a_name_draws_the_only_agent() -> None:
    out = StringIO()
    call_command("warlock_flows", "graph", stdout=out)
    assert out.getvalue() == mermaid(booking_agent())


@override_settings(
    WARLOCK_SESSIONS={
        "AGENTS": {
            "booking": "example_project.demo.agents.booking_agent",
            "timer": "tests.host.conftest.timer_agent",
        }
    }
)
def test_graph_without_a_name_among_several_agents_says_to_name_one() -> None:
    with pytest.raises(CommandError, match="DEFAULT_AGENT"):
        call_command("warlock_flows", "graph")
