"""Roving adapters layer."""
