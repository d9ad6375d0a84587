"""API tests: submissions, access, field limits, the OpenAPI document, the client's needs."""
