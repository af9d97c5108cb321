"""``manage.py warlock_flows``: draw an agent's flows, or check every configured agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.staticfiles import finders
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.html import escape

from ...agents import default_agent_name, get_agent, unready
from ...conf import warlock_settings
from ...engine.graph import mermaid
from ...errors import WarlockError

MERMAID_SCRIPT = "warlock_sessions/vendor/mermaid-12.3.0.min.js"
PAGE = """<!doctype html>
<meta charset="utf-8">
<title>{title}</title>
<pre class="mermaid">{graph}</pre>
<script>{script}</script>
<script>mermaid.initialize({{startOnLoad: true, securityLevel: "strict"}});</script>
"""


class Command(BaseCommand):
    help = (
        "graph [AGENT]: write the agent's flows (the default agent's, or the only one's, with no "
        "name) as a Mermaid flowchart (to stdout, or --output: "
        "a .html file is a page that draws it offline, any other file gets the Mermaid text). "
        "check: build every agent in WARLOCK_SESSIONS['AGENTS'] and report each one's first "
        "mistake; exits with an error when any agent is broken."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        graph = actions.add_parser("graph", help="draw an agent's flows")
        graph.add_argument(
            "agent",
            nargs="?",
            help="an agent name from WARLOCK_SESSIONS['AGENTS'] (default: DEFAULT_AGENT, or "
            "the only agent)",
        )
        graph.add_argument("--output", "-o", type=Path, help="a file (.html for a page)")
        actions.add_parser("check", help="check every configured agent")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "graph":
            self.graph(options["agent"], options["output"])
        else:
            self.check_agents()

    def graph(self, name: str | None, output: Path | None) -> None:
        try:
            name = default_agent_name() if name is None else name
            text = mermaid(get_agent(name))
        except (WarlockError, ImportError, TypeError) as error:
            raise CommandError(str(error)) from None
        if output is None:
            self.stdout.write(text, ending="")
            return
        if output.suffix.lower() in (".html", ".htm"):
            script_path = finders.find(MERMAID_SCRIPT)
            assert isinstance(script_path, str)  # shipped with the app
            script = Path(script_path).read_text(encoding="utf-8").replace("</script", "<\\/script")
            text = PAGE.format(title=escape(name), graph=escape(text), script=script)
        output.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {output}")

    def check_agents(self) -> None:
        broken = 0
        for name in warlock_settings.AGENTS:
            try:
                agent = get_agent(name)
            except (WarlockError, ImportError, TypeError) as error:
                broken += 1
                self.stderr.write(f"{name}: {error}")
                continue
            problem = unready(agent)
            if problem:
                broken += 1
                self.stderr.write(f"{name}: {problem}")
                continue
            self.stdout.write(f"{name}: ok ({len(agent.flows)} flows)")
        if broken:
            raise CommandError(f"{broken} of {len(warlock_settings.AGENTS)} agents are broken")
        if not warlock_settings.AGENTS:
            self.stdout.write("no agents configured in WARLOCK_SESSIONS['AGENTS']")
