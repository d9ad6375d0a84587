"""Use cases. Each public function is one transaction and the only place that commits."""
