"""clapcap.retrieval."""
