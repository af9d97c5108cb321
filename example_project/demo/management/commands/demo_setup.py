"""Prepares the example project for ``make demo``: the demo login, and what to open."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEMO_USERNAME = "admin"
DEMO_PASSWORD = "admin"


class Command(BaseCommand):
    help = "Create the demo superuser admin/admin if it is missing and print the demo URLs."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        if not users.objects.filter(username=DEMO_USERNAME).exists():
            users.objects.create_superuser(DEMO_USERNAME, "admin@example.com", DEMO_PASSWORD)
        self.stdout.write(
            "\nwarlock_sessions demo\n"
            "  chat:   http://127.0.0.1:8000/\n"
            "  API:    http://127.0.0.1:8000/api/  (schema: /api/schema/)\n"
            "  admin:  http://127.0.0.1:8000/admin/   (login admin / admin)\n"
        )
