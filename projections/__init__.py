"""Roving projections layer."""
