"""The data model both sides share: parser results, the node snapshot, profile summaries.

Nothing here runs a command, imports prometheus_client or pandas, or holds state.
"""
