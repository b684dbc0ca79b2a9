"""Build configuration beyond pyproject.toml: the optional compiled record kernel.

``optional=True``: when the C compiler or the Python headers are missing, the build goes on without the
kernel and the package runs on its pure-Python record code (see docs/ARCHITECTURE.md "Record fast path").

The kernel is one translation unit: ``_kernel.c`` includes its parts, ``records/kernel/*.c.h``. They are its
``depends`` (an edited part rebuilds the kernel), and setuptools' sdist carries an extension's depends.
"""

from glob import glob

from setuptools import Extension, setup

KERNEL_PARTS = sorted(glob("pykafka_client/protocol/records/kernel/*.c.h"))

setup(
    ext_modules=[
        Extension(
            "pykafka_client.protocol.records._kernel",
            ["pykafka_client/protocol/records/_kernel.c"],
            depends=KERNEL_PARTS,
            optional=True,
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        )
    ]
)
