"""clapcap.robust."""
