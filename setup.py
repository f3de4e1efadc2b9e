"""Cython extensions; everything else is in pyproject.toml."""
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

MODULES = [
    "arborist.strings",
    "arborist.weights",
    "arborist.helper",
    "arborist.parser.eisner",
    "arborist.parser.second_order_eisner",
    "arborist.parser.mst",
    "arborist.parser.features",
    "arborist.parser.part_features",
    "arborist.parser.label_features",
    "arborist.tagger.viterbi",
    "arborist.tagger.features",
    "arborist.morph.atoms",
    "arborist.tokenizer.features",
]

extensions = [
    Extension(
        name,
        ["src/" + name.replace(".", "/") + ".pyx"],
        include_dirs=[numpy.get_include()],
        extra_compile_args=["-O3"],
    )
    for name in MODULES
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )
)
