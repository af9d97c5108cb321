"""A project that serves the admin and none of the API's URLs (a check needs no DRF there)."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
