"""The HTTP edge: the asyncio + h11 server, its routes, basic auth and the exporter-toolkit web
config (TLS, mTLS, bcrypt users), re-read on change; it serves what the family rows write."""
