"""Prints one 'N passed, N failed, N skipped' line over GoogleTest JSON reports."""
import json
import pathlib
import sys

passed = failed = skipped = 0
for folder in sys.argv[1:]:
    for f in sorted(pathlib.Path(folder).glob("*.json")):
        report = json.loads(f.read_text())
        for suite in report.get("testsuites", []):
            for case in suite.get("testsuite", []):
                if case.get("result") == "SKIPPED" or case.get("status") == "NOTRUN":
                    skipped += 1
                elif case.get("failures"):
                    failed += 1
                else:
                    passed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
