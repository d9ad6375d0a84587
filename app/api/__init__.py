"""The JSON API (versioned blueprints); it authenticates with bearer tokens only, never the session cookie."""
