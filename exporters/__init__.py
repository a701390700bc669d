"""npumon outputs: Prometheus collector, HTTP server, textfile writer."""
