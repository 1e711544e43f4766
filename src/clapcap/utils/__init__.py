"""clapcap.utils."""
