"""The real corpus's sources (issue 41): one reader per Debian package, each taking the folder
of the unpacked package and returning :class:`ClipRecord` objects with captions by a written
rule (docs/corpus.md), labels, family, split group, DEP-5 licence and audio SHA-256.

No pipeline stage uses this package yet: `assemble.build_corpus` writes the corpus as a folder dataset.
"""

from clapcap.data.corpus.asterisk import asterisk_clips
from clapcap.data.corpus.drumfont import render_kit
from clapcap.data.corpus.games import (
           hedgewars_clips,
           megaglest_clips,
           openarena_clips,
           ufoai_clips,
           zero_ad_clips,
)
from clapcap.data.corpus.hydrogen import hydrogen_clips
from clapcap.data.corpus.records import ClipRecord, Licences, audio_bytes, split_by_group
from clapcap.data.corpus.samples import lmms_clips, sonic_pi_clips
from clapcap.data.corpus.soundfont import RenderedClip, musescore_programs, render_program
from clapcap.data.corpus.tuxpaint import tuxpaint_clips

__all__ = ["ClipRecord", "Licences", "RenderedClip", "asterisk_clips", "audio_bytes", "hedgewars_clips",
           "hydrogen_clips", "lmms_clips", "megaglest_clips", "musescore_programs", "openarena_clips", "render_kit",
           "render_program", "sonic_pi_clips", "split_by_group", "tuxpaint_clips", "ufoai_clips", "zero_ad_clips"]
