"""clapcap.captioning."""
