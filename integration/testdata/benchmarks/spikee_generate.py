"""Run spikee's own generator (spikee.generator.generate_dataset, the code
behind `spikee generate`) on a seed folder and print the path of the
dataset it wrote. Usage: spikee_generate.py SEED_FOLDER FORMAT [--sys]
[--standalone] [--positions=start,middle,end]. The other options are
spikee's defaults."""
import argparse
import contextlib
import glob
import io
import os
import sys

from spikee.generator import generate_dataset

seed, fmt, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
positions = ["end"]
for a in extra:
    if a.startswith("--positions="):
        positions = a.split("=", 1)[1].split(",")
args = argparse.Namespace(
    seed_folder=seed, format=fmt,
    include_system_message="--sys" in extra,
    include_standalone_inputs="--standalone" in extra,
    positions=positions, injection_delimiters="\\nINJECTION_PAYLOAD\\n",
    spotlighting_data_markers="\\nDOCUMENT\\n", languages=None, match_languages=True,
    instruction_filter=None, jailbreak_filter=None, include_fixes=None,
    include_suffixes=False, plugins=[], plugin_options=None, plugin_only=False,
    tag=None, threads=1)
with contextlib.redirect_stdout(io.StringIO()):
    generate_dataset(args)
written = sorted(glob.glob(os.path.join("datasets", "*.jsonl")), key=os.path.getmtime)
print(os.path.abspath(written[-1]))
