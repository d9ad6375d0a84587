"""Security tests: leakage of hidden labels, access, CSRF, XSS, traversal, injection, headers, attacks."""
