from setuptools import Extension, setup

setup(ext_modules=[Extension("hub._native._sim", ["hub/_native/_sim.c"])])
