# The histd Python client: standard library only (numpy used when present).
#
# A setup.py and no pyproject.toml, on purpose: pip then builds the package
# with the setuptools and wheel of the environment it runs in (Debian's
# python3-setuptools and python3-wheel) instead of fetching them into an
# isolated build environment, so a plain `pip install ./api/python` works
# with no package index (see README.md; tests/python/test_package.py).
# setuptools' scratch (build/, histd.egg-info) goes to a temporary folder
# removed when the build ends, so that an install leaves the source tree
# as it was.
import atexit
import os
import shutil
import tempfile

from setuptools import setup

SCRATCH = tempfile.mkdtemp(prefix="histd-build-")
atexit.register(shutil.rmtree, SCRATCH, True)

setup(
    name="histd",
    version="0.1.0",
    description="Client for histd, the all-pairs 3-D distance statistics service",
    long_description=open(__file__.replace("setup.py", "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=["histd"],
    package_data={"histd": ["py.typed"]},
    install_requires=[],
    extras_require={"numpy": ["numpy"], "progress": ["tqdm"]},
    options={"build": {"build_base": os.path.join(SCRATCH, "build")},
             "egg_info": {"egg_base": SCRATCH}},
)
