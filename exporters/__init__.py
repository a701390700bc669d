"""npumon outputs: the family rows and the Prometheus collector; the HTTP edge in web/."""
