"""Reports: tables, figures and the leaderboard.

- :mod:`clapcap.reporting.report`: ``build_report(inputs, out_dir)``, Markdown + LaTeX
  tables and PNG figures from result JSON files (sections without inputs say "not run").
- :mod:`clapcap.reporting.inputs`: the input schema of each section.
- :mod:`clapcap.reporting.tables`: the library's one Markdown/LaTeX table writer (also
  used by the captioning summary and the RobustCLAP benchmark), dagger and bold rules.
- :mod:`clapcap.reporting.figures`: matplotlib (Agg) figures.
- :mod:`clapcap.reporting.leaderboard`: the AudioCaps text-to-audio leaderboard data file.

See docs/reports.md.
"""
