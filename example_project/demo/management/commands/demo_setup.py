"""Prepares the example project for ``make demo``: the demo login, and what to open."""

from typing import Any

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEMO_USERNAME = "admin"
DEMO_PASSWORD = "admin"


class Command(BaseCommand):
    help = "Create the demo superuser admin/admin if it is missing and print the demo URLs."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--port", type=int, default=8000, help="the port the demo serves on")

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        if not users.objects.filter(username=DEMO_USERNAME).exists():
            users.objects.create_superuser(DEMO_USERNAME, "admin@example.com", DEMO_PASSWORD)
        site = f"http://127.0.0.1:{options['port']}"
        token = ""
        if apps.is_installed("rest_framework.authtoken"):
            from rest_framework.authtoken.models import Token

            admin = users.objects.get(username=DEMO_USERNAME)
            key = Token.objects.get_or_create(user=admin)[0].key
            token = (
                f"  token:      {key}\n"
                f"              curl -H 'Authorization: Token {key}' {site}/api/sessions/\n"
            )
        self.stdout.write(
            "\nwarlock_sessions demo\n"
            f"  chat:       {site}/\n"
            f"  assistant:  {site}/assistant/\n"
            f"  SDK agent:  {site}/helper/   (written with the OpenAI Agents SDK)\n"
            f"  API:        {site}/api/  (schema: /api/schema/)\n"
            f"  admin:      {site}/admin/   (login admin / admin)\n" + token
        )
