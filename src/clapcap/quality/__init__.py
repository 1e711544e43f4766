"""clapcap.quality."""
