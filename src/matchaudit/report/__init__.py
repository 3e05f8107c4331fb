"""Presentation: JSON, CSV tables and figures. Nothing statistical lives here."""
