from django.db import models


class Message(models.Model):
    """One chat message, kept: the tutorial's chat with a table (``migrate --run-syncdb``)."""

    room = models.CharField(max_length=100, db_index=True)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "peer"

    def __str__(self) -> str:
        return self.text
