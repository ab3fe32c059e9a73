"""Fixtures shared by every test layer."""
