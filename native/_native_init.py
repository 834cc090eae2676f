"""Built native parts of tfolab: libtfolab.so and its executables.

This package exists only in an installed tfolab: CMake installs this file as
tfolab/_native/__init__.py beside the built files. Load them through
tfolab.native (library_path(), executable_path()), never by path.
"""
