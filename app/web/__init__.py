"""Blueprints for the HTML pages."""
