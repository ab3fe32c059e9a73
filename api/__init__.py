"""Roving api layer."""
