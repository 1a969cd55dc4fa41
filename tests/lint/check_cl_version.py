#!/usr/bin/env python3
"""OpenCL version audit: encore, its tests, benches and examples must run on OpenCL 1.2 platforms.

A 1.2 ICD loader has nothing to dispatch an entry point above 1.2 to (it spins forever in
clCreateCommandQueueWithProperties), so every such call must sit behind a check of the device's
version. The entry points above 1.2 are read from cl.h (their CL_API_SUFFIX__VERSION_X_Y), so a new
header version needs no list kept by hand.

1. Sources: a call of any of them fails, except in ALLOWED, the files whose call is version-gated.
2. Built binaries: importing any of them fails, except the ALLOWED names (gated in those files).

usage: check_cl_version.py CL_H SOURCE_ROOT BINARY...
"""
import os
import re
import subprocess
import sys

# file (relative to the source root) -> entry points above 1.2 it calls behind a version check
ALLOWED = {
    'src/opencl/cl_queue.hpp': {'clCreateCommandQueueWithProperties'},
    'examples/engine_frame.c': {'clCreateCommandQueueWithProperties'},
}
SCANNED = ('src', 'include', 'tests', 'bench', 'examples')
SUFFIXES = ('.c', '.cpp', '.cc', '.h', '.hpp')


def above_1_2(cl_h):
    text = open(cl_h, encoding='utf-8', errors='replace').read()
    found = {}
    for m in re.finditer(r'\b(cl[A-Z]\w*)\s*\([^;]*?\)\s*CL_API_SUFFIX__VERSION_(\d)_(\d)', text):
        if (int(m[2]), int(m[3])) > (1, 2):
            found[m[1]] = f'{m[2]}.{m[3]}'
    return found


def main():
    cl_h, root, binaries = sys.argv[1], sys.argv[2], sys.argv[3:]
    newer = above_1_2(cl_h)
    if 'clCreateCommandQueueWithProperties' not in newer:
        print(f'{cl_h}: found no OpenCL 2.0 entry points; is this the right cl.h?')
        return 1
    failures = []
    call = re.compile(r'\b(' + '|'.join(sorted(newer)) + r')\s*\(')
    for top in SCANNED:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith(SUFFIXES):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                for n, line in enumerate(open(path, encoding='utf-8', errors='replace'), 1):
                    for m in call.finditer(line):
                        if m[1] not in ALLOWED.get(rel, ()):
                            failures.append(f'{rel}:{n}: calls {m[1]} (OpenCL {newer[m[1]]}) without a version check: '
                                            'use encore::cl::create_queue (src/opencl/cl_queue.hpp) or gate the call on '
                                            'the device version and list the file in ALLOWED')
    allowed_names = set().union(*ALLOWED.values())
    for b in binaries:
        out = subprocess.run(['nm', '-D', '--undefined-only', b], capture_output=True, text=True)
        if out.returncode != 0:
            failures.append(f'{b}: nm failed: {out.stderr.strip()}')
            continue
        for line in out.stdout.splitlines():
            name = line.split()[-1].split('@')[0]
            if name in newer and name not in allowed_names:
                failures.append(f'{b}: imports {name} (OpenCL {newer[name]}), which a 1.2 platform lacks')
    for f in failures:
        print(f)
    print(f'{len(newer)} entry points above OpenCL 1.2 in {cl_h}; {len(binaries)} binaries; {len(failures)} problems')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
