"""clapcap.data."""
