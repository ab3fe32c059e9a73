"""Roving domain layer."""
