"""clapcap.evaluation."""
