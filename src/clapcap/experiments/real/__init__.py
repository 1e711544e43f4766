"""The studies on real audio: ``recordings`` (the 129 real recordings' benchmark), ``clap`` (the
real corpus's tower CLAP, the project's default), ``captioning`` (captioning the real corpus and
its reference captioners) and ``robust`` (RobustCLAP on real captions).
"""
