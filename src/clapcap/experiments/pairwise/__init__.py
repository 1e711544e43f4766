"""The pairwise A/B study end to end (``study``), over :mod:`clapcap.pairwise`."""
