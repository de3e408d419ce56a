"""Revision: which dated decisions replace which (supersession proposals)."""
