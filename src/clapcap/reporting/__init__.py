"""clapcap.reporting."""
