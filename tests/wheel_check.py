"""``make wheel-check``: each compiled core wheel named on the command line is one a Linux host
with glibc 2.17 or newer can load, on the architecture its file name says.

For each wheel, ``auditwheel show`` (its output printed) must find it consistent with
manylinux2014 (``manylinux_2_17_<arch>``), the file name must carry that tag, and its extension
modules must be ELF for that architecture and need no symbol without a version outside the Python
C API. auditwheel judges the glibc version by versioned symbols only: one compiled against a
newer glibc's headers and left unversioned at link time (C11 threads, glibc 2.28, when librdkafka
is compiled by the build host's compiler rather than zig) passes it, and the import then fails on
an older glibc. Exits 1 naming each wheel that fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from io import BytesIO
from pathlib import Path

from elftools.elf.elffile import ELFFile  # pyelftools, auditwheel's own dependency

#: ELF e_machine of each architecture a wheel's platform tag names
MACHINES = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}


def architecture(wheel: Path) -> str:
    """The architecture of a wheel's (first) platform tag, ``x86_64`` in
    ``...-manylinux2014_x86_64.manylinux_2_17_x86_64.whl``."""
    tag = wheel.name.removesuffix(".whl").split("-")[-1].split(".")[0]
    found = re.fullmatch(r"(?:manylinux\d+|manylinux_\d+_\d+|linux)_(.+)", tag)
    return found.group(1) if found else tag


def unversioned(module: bytes) -> tuple[str, list[str]]:
    """An extension module's ELF machine, and the undefined strong symbols it needs without a
    version, less the Python C API's (the interpreter provides those)."""
    elf = ELFFile(BytesIO(module))
    dynsym = elf.get_section_by_name(".dynsym")
    versions = elf.get_section_by_name(".gnu.version")
    missing = []
    for index, symbol in enumerate(dynsym.iter_symbols()):
        if symbol["st_shndx"] != "SHN_UNDEF" or symbol["st_info"]["bind"] != "STB_GLOBAL":
            continue
        if not symbol.name or symbol.name.startswith(("Py", "_Py")):
            continue
        version = versions.get_symbol(index).entry["ndx"] if versions else "VER_NDX_GLOBAL"
        if version in ("VER_NDX_LOCAL", "VER_NDX_GLOBAL"):
            missing.append(symbol.name)
    return elf["e_machine"], sorted(missing)


def check(wheel: Path) -> list[str]:
    """What is wrong with one wheel (empty: nothing); prints auditwheel's report."""
    arch = architecture(wheel)
    expected = f"manylinux_2_17_{arch}"
    shown = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    print(shown.stdout + shown.stderr, flush=True)
    problems = []
    tag = re.search(r"consistent with the following platform tag:\s*\"([^\"]+)\"", shown.stdout)
    if shown.returncode != 0 or tag is None:
        problems.append(f"auditwheel show failed (exit {shown.returncode})")
    elif tag.group(1) != expected:
        problems.append(f"auditwheel finds it {tag.group(1)}, not {expected}")
    if expected not in wheel.name:
        problems.append(f"its name does not carry {expected}")
    with zipfile.ZipFile(wheel) as archive:
        modules = [name for name in archive.namelist() if name.endswith(".so")]
        if not modules:
            problems.append("it holds no extension module")
        for name in modules:
            machine, missing = unversioned(archive.read(name))
            print(f"{name}: {machine}, unversioned symbols needed: {missing or 'none'}")
            if machine != MACHINES.get(arch):
                problems.append(f"{name} is {machine}, not {arch}")
            if missing:
                problems.append(f"{name} needs symbols without a version: {', '.join(missing)}")
    return problems


def main(paths: list[str]) -> int:
    wheels = [Path(path) for path in paths]
    absent = [str(wheel) for wheel in wheels if not wheel.is_file()]
    if not wheels or absent:
        print(f"error: no core wheel {' '.join(absent)} (make wheel builds them)")
        return 1
    failed = 0
    for wheel in wheels:
        problems = check(wheel)
        verdict = "ok" if not problems else "FAILED: " + "; ".join(problems)
        print(f"{wheel.name}: {verdict}\n")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
