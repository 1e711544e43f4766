"""clapcap.encoders."""
