"""Build configuration beyond pyproject.toml: the optional compiled record kernel.

``optional=True``: when the C compiler or the Python headers are missing, the build goes on without the
kernel and the package runs on its pure-Python record code (see docs/ARCHITECTURE.md "Record fast path").
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pykafka_client.protocol.records._kernel",
            ["pykafka_client/protocol/records/_kernel.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        )
    ]
)
