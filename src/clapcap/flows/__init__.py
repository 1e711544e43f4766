"""clapcap.flows."""
