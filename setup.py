"""The package list, which pyproject.toml cannot express: resources/ installs as explorer.resources."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["explorer*", "seqmodels*"]) + ["explorer.resources"],
    package_dir={"explorer.resources": "resources"},
)
