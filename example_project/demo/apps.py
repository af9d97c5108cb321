from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "example_project.demo"
    label = "demo"

    def ready(self) -> None:
        # Its definition registers by name, so the admin can resume its runs.
        from . import workflows  # noqa: F401
