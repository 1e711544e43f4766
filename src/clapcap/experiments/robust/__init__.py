"""RobustCLAP's studies, over the model of :mod:`clapcap.robust`: ``benchmark`` (the
paraphrase-robustness benchmark) and ``report`` (its tables), ``seeds`` (fine-tunes over seeds
and their findings), ``kinds`` (which kind of paraphrase costs the base), ``views`` (view 1 only,
view 2 only) and ``view_source`` (training on an LLM's views).
"""
