"""The synthetic CLAP's variants (``variants``): each trained, embedded and compared, paired,
with the synthetic CLAP.
"""
