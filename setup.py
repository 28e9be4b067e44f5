"""Build hook for the one thing pyproject.toml cannot say: with MUSTER_COMPILE=1 the modules
scheduler/build.py lists are compiled with mypyc into C extension modules (the image is
built so; docs/design.md, "The compiled core"). Unset or 0, muster is plain Python."""

import os
import runpy
import sys

from setuptools import setup

choice = os.environ.get("MUSTER_COMPILE", "")
if choice not in ("", "0", "1"):
    sys.exit(
        f"MUSTER_COMPILE={choice!r} is not understood: 1 compiles the core with mypyc, "
        "0 or unset builds plain Python"
    )
if choice == "1":
    from mypyc.build import mypycify

    # Read as a file: importing the package would need its dependencies installed.
    modules = runpy.run_path(os.path.join("scheduler", "build.py"))["COMPILED_MODULES"]
    paths = [module.replace(".", "/") + ".py" for module in modules]
    setup(ext_modules=mypycify(paths, opt_level="3"))
else:
    setup()
