"""clapcap.training: training loops (imports encoders, never the reverse)."""
